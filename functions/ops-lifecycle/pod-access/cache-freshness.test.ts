import { describe, expect, it } from 'vitest';
import { afterReconcile, cacheIsFreshEnough, wokenBy, type HandledPod } from './cache-freshness.js';

const uid = 'u1';
const at = (version: string) => ({ version, uid });

describe('wokenBy', () => {
  it('tells resync, Pod-changing and Pod-neutral reasons apart', () => {
    expect(wokenBy('resync')).toBe('resync');
    expect(wokenBy('Service:delete')).toBe('other');
    expect(wokenBy('EndpointSlice:update')).toBe('other');
    for (const r of ['Pod:update', 'Pod:create', 'retry', 'dirty', 'handler', 'event', 'manual', 'requeue']) expect(wokenBy(r)).toBe('pod');
  });
});

describe('cacheIsFreshEnough', () => {
  const handledAt10: HandledPod = { uid, handled: '10', echoPending: false };
  const wrote12: HandledPod = { uid, handled: '12', wrote: '12', echoPending: true };

  it('a Pod event: only a version past what this process last planned from or wrote', () => {
    expect(cacheIsFreshEnough(at('11'), 'pod', handledAt10)).toBe(true);
    // The cache still holds what was handled: the change that woke the reconcile is not in it yet.
    expect(cacheIsFreshEnough(at('10'), 'pod', handledAt10)).toBe(false);
    expect(cacheIsFreshEnough(at('9'), 'pod', handledAt10)).toBe(false);
  });

  it('a Pod event with no record of the Pod (another process handled it, or another instance) reads live', () => {
    expect(cacheIsFreshEnough(at('11'), 'pod', undefined)).toBe(false);
    expect(cacheIsFreshEnough({ version: '11', uid: 'u2' }, 'pod', handledAt10)).toBe(false);
  });

  it("the event of this process's own write is served by the cache holding exactly that write, once", () => {
    expect(cacheIsFreshEnough(at('12'), 'pod', wrote12)).toBe(true);
    expect(cacheIsFreshEnough(at('12'), 'pod', { ...wrote12, echoPending: false })).toBe(false);
    expect(cacheIsFreshEnough(at('13'), 'pod', { ...wrote12, echoPending: false })).toBe(true);
  });

  it('never older than our own last write, whatever woke the reconcile', () => {
    for (const woken of ['resync', 'other', 'pod'] as const) {
      expect(cacheIsFreshEnough(at('11'), woken, wrote12)).toBe(false);
      expect(cacheIsFreshEnough(at('13'), woken, wrote12)).toBe(true);
    }
    // Without a record of the Pod, a resync or a Service/EndpointSlice event takes what the cache holds.
    expect(cacheIsFreshEnough(at('9'), 'resync', undefined)).toBe(true);
    expect(cacheIsFreshEnough(at('9'), 'other', undefined)).toBe(true);
  });

  it('never older than what this process already planned from, whatever woke the reconcile', () => {
    // The gate written at 20, Ready False at 21 read live (handled 21), then the EndpointSlice's event: the cache
    // still at 20 would plan from Ready True and grant nothing.
    const readLive21: HandledPod = { uid, handled: '21', wrote: '20', echoPending: true };
    for (const woken of ['resync', 'other', 'pod'] as const) expect(cacheIsFreshEnough(at('20'), woken, readLive21)).toBe(false);
    expect(cacheIsFreshEnough(at('21'), 'other', readLive21)).toBe(true);
    expect(cacheIsFreshEnough(at('21'), 'resync', readLive21)).toBe(true);
    expect(cacheIsFreshEnough(at('9'), 'resync', handledAt10)).toBe(false);
    expect(cacheIsFreshEnough(at('10'), 'resync', handledAt10)).toBe(true);
  });

  it('opaque versions are trusted only when equal: a different one may be older', () => {
    expect(cacheIsFreshEnough(at('b'), 'pod', { uid, handled: 'a', echoPending: false })).toBe(false);
    expect(cacheIsFreshEnough(at('b'), 'resync', { uid, handled: 'a', echoPending: false })).toBe(false);
    expect(cacheIsFreshEnough(at('a'), 'resync', { uid, handled: 'a', echoPending: false })).toBe(true);
    expect(cacheIsFreshEnough(at('a'), 'pod', { uid, handled: 'a', echoPending: false })).toBe(false);
    expect(cacheIsFreshEnough(at('a'), 'pod', { uid, handled: 'a', wrote: 'a', echoPending: true })).toBe(true);
  });
});

describe('afterReconcile', () => {
  it('a write moves handled and wrote to its version and expects its event', () => {
    expect(afterReconcile(undefined, at('10'), '12')).toEqual({ uid, handled: '12', wrote: '12', echoPending: true });
  });

  it('planning from our own write (or past it) consumes its event; the write stays the floor', () => {
    const wrote = afterReconcile(undefined, at('10'), '12');
    expect(afterReconcile(wrote, at('12'))).toEqual({ uid, handled: '12', wrote: '12', echoPending: false });
    expect(afterReconcile(wrote, at('14'))).toEqual({ uid, handled: '14', wrote: '12', echoPending: false });
  });

  it('nothing written: handled is the version planned from, never moved back by an older plan', () => {
    expect(afterReconcile(undefined, at('10'))).toEqual({ uid, handled: '10', echoPending: false });
    expect(afterReconcile(afterReconcile(undefined, at('10')), at('10'), '10')).toEqual({ uid, handled: '10', echoPending: false });
    expect(afterReconcile({ uid, handled: '15', echoPending: false }, at('10')).handled).toBe('15');
  });

  it('another instance of the name starts a new record', () => {
    expect(afterReconcile({ uid: 'old', handled: '99', wrote: '99', echoPending: true }, at('10'))).toEqual({ uid, handled: '10', echoPending: false });
  });
});

describe('the version the queue says woke the reconcile (minResourceVersion)', () => {
  const handledAt10: HandledPod = { uid, handled: '10', echoPending: false };

  it('wokenBy carries it, and is the bare kind without it', () => {
    expect(wokenBy('Pod:update', '15')).toEqual({ by: 'pod', atLeast: '15' });
    expect(wokenBy('Service:update', '15')).toEqual({ by: 'other', atLeast: '15' });
    expect(wokenBy('resync', '')).toBe('resync');
  });

  it("a cache behind another worker's newer Pod event is not used, though this process's own record would allow it", () => {
    // This process planned from 10; the cache holds 11 (past it), but the event that woke the job was at 15.
    expect(cacheIsFreshEnough(at('11'), 'pod', handledAt10)).toBe(true);
    expect(cacheIsFreshEnough(at('11'), { by: 'pod', atLeast: '15' }, handledAt10)).toBe(false);
    expect(cacheIsFreshEnough(at('15'), { by: 'pod', atLeast: '15' }, handledAt10)).toBe(true);
  });

  it('applies to requests of every kind: a Pod event folded into a Service-woken job or a resync counts', () => {
    for (const by of ['resync', 'other'] as const) {
      expect(cacheIsFreshEnough(at('11'), by, handledAt10)).toBe(true);
      expect(cacheIsFreshEnough(at('11'), { by, atLeast: '12' }, handledAt10)).toBe(false);
      expect(cacheIsFreshEnough(at('12'), { by, atLeast: '12' }, handledAt10)).toBe(true);
    }
  });

  it("keeps today's rules on top: reaching the version is not enough without a record of the Pod", () => {
    expect(cacheIsFreshEnough(at('15'), { by: 'pod', atLeast: '15' }, undefined)).toBe(false);
  });

  it('orders as integers, and trusts an opaque version only when equal', () => {
    expect(cacheIsFreshEnough(at('100'), { by: 'other', atLeast: '99' }, undefined)).toBe(true);
    expect(cacheIsFreshEnough(at('99'), { by: 'other', atLeast: '100' }, undefined)).toBe(false);
    expect(cacheIsFreshEnough(at('abc'), { by: 'other', atLeast: 'abc' }, undefined)).toBe(true);
    expect(cacheIsFreshEnough(at('abd'), { by: 'other', atLeast: 'abc' }, undefined)).toBe(false);
  });
});
