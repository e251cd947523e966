import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../kube/object.js';
import { DeliveryBuffer } from './delivery-buffer.js';
import type { WatchEvent } from './events.js';

const obj = (name: string, rv: string): KubeObject => ({ metadata: { name, namespace: 'ns', resourceVersion: rv, uid: `uid-${name}` } });
const upd = (name: string, from: string, to: string): WatchEvent => ({ type: 'update', old: obj(name, from), object: obj(name, to) });
const keyBackoff = { initialMs: 100, maxMs: 1000, resetAfterMs: 60_000 };

describe('DeliveryBuffer', () => {
  it('holds one folded event per key however many arrive while delivery is stuck', () => {
    const b = new DeliveryBuffer({}, () => 0);
    for (let i = 1; i <= 1000; i++) for (const name of ['a', 'b', 'c']) b.push(`ns/${name}`, upd(name, String(i), String(i + 1)));
    expect(b.size).toBe(3);
    expect(b.keys).toBe(3);
    const first = b.take(0);
    expect(first).toMatchObject({ key: 'ns/a', event: { type: 'update', old: { metadata: { resourceVersion: '1' } }, object: { metadata: { resourceVersion: '1001' } } } });
  });

  it('hands out keys oldest first, never two events of one key at once, and sends a busy key to the back', () => {
    const b = new DeliveryBuffer({}, () => 0);
    b.push('ns/a', { type: 'create', object: obj('a', '1') });
    b.push('ns/b', { type: 'create', object: obj('b', '1') });
    const a = b.take(0)!;
    expect(a.key).toBe('ns/a');
    // A change of a while its create is in flight waits for it, and is not folded into it.
    b.push('ns/a', upd('a', '1', '2'));
    expect(b.take(0)?.key).toBe('ns/b');
    expect(b.take(0)).toBeUndefined();
    b.succeeded('ns/a');
    b.succeeded('ns/b');
    expect(b.take(0)).toMatchObject({ key: 'ns/a', event: { type: 'update' } });
    b.succeeded('ns/a');
    expect(b.size).toBe(0);
    expect(b.keys).toBe(0);
  });

  it('a delete that arrives while delivery is stuck is kept (folded over earlier updates, never dropped)', () => {
    const b = new DeliveryBuffer({}, () => 0);
    b.push('ns/a', upd('a', '1', '2'));
    const inFlight = b.take(0)!;
    b.push('ns/a', { type: 'delete', object: obj('a', '3'), synthetic: false });
    expect(b.failed(inFlight.key, inFlight.event, true, 0)).toEqual({ action: 'hold' });
    expect(b.size).toBe(1);
    expect(b.take(0)).toMatchObject({ event: { type: 'delete', object: { metadata: { resourceVersion: '3' } } } });
  });

  it('a transient failure with nothing else getting through holds the key in front and counts nothing (Redis down)', () => {
    const b = new DeliveryBuffer({ maxAttempts: 2, keyBackoff }, () => 0);
    b.push('ns/a', upd('a', '1', '2'));
    b.push('ns/b', upd('b', '1', '2'));
    for (let i = 0; i < 10; i++) {
      const next = b.take(i)!;
      expect(next.key).toBe('ns/a');
      expect(b.failed(next.key, next.event, true, i)).toEqual({ action: 'hold' });
    }
    expect(b.size).toBe(2);
  });

  it('a key that fails on its own backs off alone and is dead-lettered after maxAttempts while others flow', () => {
    const b = new DeliveryBuffer({ maxAttempts: 3, keyBackoff }, () => 0);
    b.push('ns/poison', upd('poison', '1', '2'));
    b.push('ns/good', upd('good', '1', '2'));
    let now = 0;
    const verdicts: string[] = [];
    for (let round = 0; round < 3; round++) {
      const p = b.take(now)!;
      expect(p.key).toBe('ns/poison');
      const v = b.failed(p.key, p.event, false, now);
      verdicts.push(v.action === 'retry-key' ? `retry ${v.attempts} in ${v.retryInMs}` : v.action);
      // While the poison key waits, the others go on.
      const g = b.take(now);
      if (g) b.succeeded(g.key);
      b.push('ns/good', upd('good', String(round + 2), String(round + 3)));
      now = b.nextRetryAt() ?? now;
    }
    expect(verdicts).toEqual(['retry 1 in 100', 'retry 2 in 200', 'dead-letter']);
    expect(b.keys).toBe(1); // only good's latest change is left
    expect(b.take(now)?.key).toBe('ns/good');
  });

  it('a transient-looking failure counts against a key once another key got through since its last failure', () => {
    const b = new DeliveryBuffer({ maxAttempts: 5, keyBackoff }, () => 0);
    b.push('ns/a', upd('a', '1', '2'));
    b.push('ns/b', upd('b', '1', '2'));
    const a1 = b.take(0)!;
    expect(b.failed(a1.key, a1.event, false, 0)).toEqual({ action: 'retry-key', attempts: 1, retryInMs: 100 });
    const other = b.take(0)!;
    expect(other.key).toBe('ns/b');
    b.succeeded(other.key);
    const a2 = b.take(100)!;
    expect(b.failed(a2.key, a2.event, true, 100)).toEqual({ action: 'retry-key', attempts: 2, retryInMs: 200 });
    // Nothing else got through since: the next transient failure holds everything again.
    const a3 = b.take(300)!;
    expect(b.failed(a3.key, a3.event, true, 300)).toEqual({ action: 'hold' });
  });

  it('dead-letters only the given-up event: a recreated object under the key gets fresh attempts', () => {
    const b = new DeliveryBuffer({ maxAttempts: 1, keyBackoff }, () => 0);
    b.push('ns/a', { type: 'delete', object: obj('a', '1'), synthetic: false });
    b.push('ns/a', { type: 'create', object: { metadata: { name: 'a', namespace: 'ns', resourceVersion: '2', uid: 'other' } } });
    const d = b.take(0)!;
    const v = b.failed(d.key, d.event, false, 0);
    expect(v).toMatchObject({ action: 'dead-letter', attempts: 1, event: { type: 'delete' } });
    expect(b.size).toBe(1);
    expect(b.take(0)).toMatchObject({ event: { type: 'create' } });
  });
});
