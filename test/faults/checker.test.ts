import { describe, expect, it } from 'vitest';
import { checkHistory, parseHistory, type ReconcileRecord } from './checker.js';

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
});
