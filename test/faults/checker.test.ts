import { describe, expect, it } from 'vitest';
import { checkEffects, checkHistory, compareOrder, parseHistory, type ReconcileRecord, type Stamp } from './checker.js';

// The checker is pure; these cases need nothing running (they sit in the integration project only
// because the unit project leaves test/ out).
function rec(over: Partial<ReconcileRecord>): ReconcileRecord {
  return { key: 'k', token: '1', pid: 1, start: 0, end: 10, version: 1, outcome: 'accepted', ...over };
}

describe('fault history checker', () => {
  it('passes a serial history whose last reconcile read the final version', () => {
    const r = checkHistory([rec({ token: '1', start: 0, end: 10, version: 1 }), rec({ token: '2', start: 11, end: 20, version: 2 })], new Map([['k', 2]]));
    expect(r).toMatchObject({ reconciles: 2, accepted: 2, overlaps: 0, tokenOrder: 0, lost: 0 });
    expect(r.violations).toEqual([]);
  });

  it('finds the overlap of the repro: A start, B start, B end, B start, A end', () => {
    const history = [
      rec({ pid: 1, token: '1', start: 0, end: 6000, version: 1 }),
      rec({ pid: 2, token: '2', start: 1500, end: 1600, version: 1 }),
      rec({ pid: 2, token: '3', start: 1700, end: 1800, version: 2 }),
    ];
    const r = checkHistory(history, new Map([['k', 2]]));
    expect(r.overlaps).toBe(2);
    expect(r.violations.map((v) => v.kind)).toEqual(['overlap', 'overlap']);
  });

  it('ignores fenced-out and failed reconciles for overlap, order and lost updates', () => {
    const history = [
      rec({ pid: 1, token: '1', start: 0, end: 6000, version: 2, outcome: 'fenced-out' }),
      rec({ pid: 1, token: '4', start: 5, end: 7, version: 2, outcome: 'failed' }),
      rec({ pid: 2, token: '2', start: 1500, end: 1600, version: 1 }),
    ];
    const r = checkHistory(history, new Map([['k', 2]]));
    expect(r).toMatchObject({ reconciles: 3, accepted: 1, fencedOut: 1, failed: 1, overlaps: 0, tokenOrder: 0, lost: 1 });
  });

  it('finds tokens that do not increase with start time, and missing tokens', () => {
    const r = checkHistory(
      [rec({ token: '10', start: 0, end: 1 }), rec({ token: '9', start: 2, end: 3 }), rec({ token: '', start: 4, end: 5 })],
      new Map([['k', 1]]),
    );
    expect(r.tokenOrder).toBe(2);
  });

  it('compares tokens as integers, not strings', () => {
    const r = checkHistory([rec({ token: '9', start: 0, end: 1 }), rec({ token: '10', start: 2, end: 3 })], new Map([['k', 1]]));
    expect(r.tokenOrder).toBe(0);
  });

  it('counts a changed key with no accepted reconcile as lost, and an unchanged key as fine', () => {
    const r = checkHistory([], new Map([['a', 3], ['b', 0]]));
    expect(r.lost).toBe(1);
    expect(r.violations[0]).toMatchObject({ kind: 'lost', key: 'a' });
  });

  it('parses JSON lines and skips a torn last line', () => {
    const line = JSON.stringify(rec({}));
    expect(parseHistory(`${line}\n${line}\n{"key":"k","tok`)).toHaveLength(2);
  });

  it('checks the woken-at version only when asked: an accepted reconcile of the key must be woken at its final version', () => {
    const history = [rec({ token: '1', start: 0, end: 1, version: 3, woken: '2' }), rec({ key: 'j', token: '2', start: 0, end: 1, version: 4, woken: '4' })];
    const finals = new Map([['k', 3], ['j', 4]]);
    expect(checkHistory(history, finals).woken).toBe(0);
    const r = checkHistory(history, finals, { woken: true });
    expect(r.woken).toBe(1);
    expect(r.violations).toEqual([expect.objectContaining({ kind: 'woken', key: 'k' })]);
    // A later run woken with no new event (a dirty mark, a resync) does not undo the one that took the version.
    const later = [rec({ token: '1', start: 0, end: 1, version: 3, woken: '3' }), rec({ token: '2', start: 2, end: 3, version: 3 })];
    expect(checkHistory(later, new Map([['k', 3]]), { woken: true }).woken).toBe(0);
    // A version taken by a run that was fenced out only counts once an accepted run gets it.
    const fenced = [rec({ token: '1', start: 0, end: 1, version: 3, woken: '3', outcome: 'fenced-out' }), rec({ token: '2', start: 2, end: 3, version: 3 })];
    expect(checkHistory(fenced, new Map([['k', 3]]), { woken: true }).woken).toBe(1);
  });
});

describe('fault effect checker', () => {
  const read = (kind: Stamp['kind'], token: string, order: string, key = 'k'): Stamp => ({ kind, key, token, order });
  const effect = read;

  it('passes effects that landed before the next token read (or with no newer token at all)', () => {
    const reads = [read('api', '1', '100'), read('api', '2', '105'), read('api', '3', '120')];
    const landed = [effect('api', '1', '101'), effect('api', '2', '110'), effect('api', '3', '130')];
    expect(checkEffects(reads, landed)).toMatchObject({ effects: 3, staleLanded: 0, violations: [] });
  });

  it('fails an API write of an old token that landed after a newer token read (the stale holder resumed into a PUT)', () => {
    // Token 1 read at 100 and paused; token 2 took the key over and read 100 too; token 1's PUT, preconditioned
    // on 100, landed as 101 while token 2 was planning: the write the issue says must be refused.
    const r = checkEffects([read('api', '1', '100'), read('api', '2', '100')], [effect('api', '1', '101')]);
    expect(r.staleLanded).toBe(1);
    expect(r.violations[0]).toMatchObject({ kind: 'stale-effect', key: 'k' });
    expect(r.violations[0]!.detail).toContain('token 2 read at 100');
  });

  it('compares against the earliest read of any newer token, not only the next one', () => {
    // Token 3 read early (place 10); token 2's read came later: token 1's effect at place 15 is after token 3's read.
    const reads = [read('state', '1', '9'), read('state', '3', '10'), read('state', '2', '20')];
    expect(checkEffects(reads, [effect('state', '1', '15')]).staleLanded).toBe(1);
    expect(checkEffects(reads, [effect('state', '1', '9')]).staleLanded).toBe(0);
  });

  it('orders stamps as integers, not strings', () => {
    expect(compareOrder('state', '9', '10')).toBe(-1);
    expect(compareOrder('api', '99', '100')).toBe(-1);
    expect(compareOrder('api', '100', '100')).toBe(0);
    expect(compareOrder('api', '18446744073709551617', '18446744073709551616')).toBe(1);
    expect(() => compareOrder('api', 'abc', '1')).toThrow(/not a api order stamp/);
    expect(checkEffects([read('state', '2', '9')], [effect('state', '1', '10')]).staleLanded).toBe(1);
  });

  it('keeps keys and kinds apart', () => {
    const r = checkEffects([read('api', '2', '10', 'other'), read('state', '2', '1')], [effect('api', '1', '50'), effect('state', '1', '5', 'other')]);
    expect(r.staleLanded).toBe(0);
  });

  it('counts what the workers saw refused and what they never learnt', () => {
    const records = [
      rec({ effects: [{ kind: 'api', outcome: 'refused', detail: '409' }, { kind: 'state', outcome: 'refused', detail: 'LeaseLostError' }] }),
      rec({ effects: [{ kind: 'api', outcome: 'unknown' }, { kind: 'state', outcome: 'landed' }] }),
    ];
    expect(checkEffects([], [effect('state', '1', '1')], records)).toMatchObject({ effects: 1, refused: 2, unknown: 1, staleLanded: 0 });
  });
});
