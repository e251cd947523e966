import { describe, expect, it } from 'vitest';
import { currentReconcile, inReconcileScope, LeaseLostError, outsideReconcileScope, requestTimeoutMs, throwIfLeaseLost, whileClaimed, type ReconcileScope } from './reconcile-scope.js';

const scopeOf = (signal: AbortSignal, sendBy = Date.now() + 60_000, aliveUntil = sendBy + 1_000): ReconcileScope => ({ signal, token: 't', sendBy, aliveUntil });

describe('outsideReconcileScope', () => {
  it('runs work, and the async work and timers it starts, outside the reconcile that called it', async () => {
    const lost = new AbortController();
    const later = await inReconcileScope(scopeOf(lost.signal), async () => {
      // Inside: the claim is seen.
      expect(currentReconcile()?.token).toBe('t');
      return outsideReconcileScope(() => {
        expect(currentReconcile()).toBeUndefined();
        return () => new Promise<ReconcileSeen>((resolve) => setTimeout(() => resolve({ scope: currentReconcile(), threw: threw() }), 5));
      });
    });
    lost.abort('lease lost');
    // Work started outside keeps that context after the reconcile lost its lease.
    expect(await later()).toEqual({ scope: undefined, threw: false });
    // Work inside the scope, by contrast, sees the lost claim.
    const inside = await inReconcileScope(scopeOf(lost.signal), async () => threw());
    expect(inside).toBe(true);
  });
});

interface ReconcileSeen {
  scope: unknown;
  threw: boolean;
}

function threw(): boolean {
  try {
    throwIfLeaseLost('probe');
    return false;
  } catch (err) {
    expect(err).toBeInstanceOf(LeaseLostError);
    return true;
  }
}

describe('throwIfLeaseLost', () => {
  it('refuses by the clock once the send deadline has passed, though the timer that aborts the signal has not run', async () => {
    // What a pause does: the lease ran out while the loop slept, and the handler resumes before the
    // overdue expiry timer can abort the signal (Node runs I/O callbacks and microtasks first).
    const signal = new AbortController().signal;
    const sendBy = Date.now() - 5;
    const err = await inReconcileScope(scopeOf(signal, sendBy), async () => {
      try {
        throwIfLeaseLost('PUT /api/v1/namespaces/a/configmaps/b');
        return undefined;
      } catch (e) {
        return e;
      }
    });
    expect(signal.aborted).toBe(false);
    expect(err).toBeInstanceOf(LeaseLostError);
    expect(String(err)).toMatch(/lease ran out \d+ ms ago/);
  });

  it('lets a call through while the lease has time left, and outside any reconcile', async () => {
    const signal = new AbortController().signal;
    await inReconcileScope(scopeOf(signal), async () => expect(() => throwIfLeaseLost('GET')).not.toThrow());
    expect(() => throwIfLeaseLost('GET')).not.toThrow();
  });
});

describe('requestTimeoutMs', () => {
  it('never lets a request inside a reconcile wait past its lease, and leaves others alone', async () => {
    const signal = new AbortController().signal;
    const now = Date.now();
    const inside = await inReconcileScope(scopeOf(signal, now + 1_000, now + 2_000), async () => [requestTimeoutMs(30_000), requestTimeoutMs(500), requestTimeoutMs(0)]);
    expect(inside[0]).toBeLessThanOrEqual(2_000);
    expect(inside[0]).toBeGreaterThan(1_500);
    expect(inside[1]).toBe(500);
    expect(inside[2]).toBeLessThanOrEqual(2_000);
    expect(requestTimeoutMs(30_000)).toBe(30_000);
    expect(requestTimeoutMs(0)).toBe(0);
  });
});

describe('whileClaimed', () => {
  it('gives up a typed-client call when the claim is lost while it waits, and never starts one after', async () => {
    const lost = new AbortController();
    let started = 0;
    const slow = () => {
      started++;
      return new Promise<string>((resolve) => setTimeout(() => resolve('late'), 200));
    };
    const waiting = inReconcileScope(scopeOf(lost.signal), () => whileClaimed('list pods', slow));
    setTimeout(() => lost.abort('refused'), 20);
    await expect(waiting).rejects.toBeInstanceOf(LeaseLostError);
    await expect(inReconcileScope(scopeOf(lost.signal), () => whileClaimed('list nodes', slow))).rejects.toThrow(/not sent/);
    expect(started).toBe(1);
    await expect(whileClaimed('outside', async () => 'ok')).resolves.toBe('ok');
  });
});
