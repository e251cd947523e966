import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../base/log.js';
import { queueKeys } from './keys.js';
import { ClaimLease, queueRenewal, sendMarginMs } from './lease.js';

// A real client that never connects: these leases are stopped or lost long before their first renewal (a third of a
// minute), so no command is ever sent.
const redis = new Redis({ lazyConnect: true });
const leases: ClaimLease[] = [];
function lease(): ClaimLease {
  const l = new ClaimLease(queueRenewal(redis, queueKeys('ripple', 'fn'), 'ns/a', '7', 60_000), 'ns/a', '7', 60_000, Date.now(), createLogger('lease-test', 'silent'));
  leases.push(l);
  return l;
}
afterEach(() => {
  for (const l of leases.splice(0)) l.stop();
});

describe('ClaimLease', () => {
  it('builds its signal on first use, already aborted with the reason when the lease was lost before', () => {
    const l = lease();
    l.lose('refused');
    expect(l.lost).toBe('refused');
    expect(l.signal.aborted).toBe(true);
    expect(l.signal.reason).toBe('refused');
  });

  it('lets every request of a reconcile listen on its signal without a MaxListeners warning', async () => {
    // Each API request in flight inside the reconcile listens on the signal until it ends (kube/raw.ts), and
    // MODELSERVING_APPLY_CONCURRENCY may put more than Node's default of 10 in flight at once.
    const warnings: Error[] = [];
    const onWarning = (w: Error) => void warnings.push(w);
    process.on('warning', onWarning);
    try {
      const l = lease();
      const listeners = Array.from({ length: 64 }, () => () => undefined);
      for (const f of listeners) l.signal.addEventListener('abort', f, { once: true });
      await new Promise((r) => setImmediate(r));
      expect(warnings.map((w) => w.name)).not.toContain('MaxListenersExceededWarning');
      for (const f of listeners) l.signal.removeEventListener('abort', f);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('aborts a signal read before the loss, with the reason, and only for the first loss', () => {
    const l = lease();
    const signal = l.signal;
    expect(signal.aborted).toBe(false);
    l.lose('expired');
    l.lose('refused');
    expect(signal.reason).toBe('expired');
    expect(l.lost).toBe('expired');
  });

  it('calls whenLost once on the loss, and at once when the lease is lost already', () => {
    const l = lease();
    const calls: string[] = [];
    l.whenLost(() => calls.push('before'));
    expect(calls).toEqual([]);
    l.lose('lock-lost');
    l.lose('lock-lost');
    l.whenLost(() => calls.push('after'));
    expect(calls).toEqual(['before', 'after']);
  });

  it.each(['deadline', 'expired', 'refused', 'lock-lost'] as const)('keeps the key held until the lease runs out after a loss by %s', (reason) => {
    // The worker frees the key only after aliveUntil: a request sent just before the loss must not land
    // after a new holder's claim. Before issue 28 every loss but the deadline answered 0 (freed at once).
    const l = lease();
    const alive = l.aliveUntil;
    l.lose(reason);
    expect(l.aliveUntil).toBe(alive);
    expect(alive).toBeGreaterThan(Date.now());
  });

  it('stops sending a margin before the lease ends: a tenth of the lease, at most a second', () => {
    const l = lease();
    expect(l.aliveUntil - l.sendBy).toBe(1_000);
    expect(sendMarginMs(60_000)).toBe(1_000);
    expect(sendMarginMs(3_000)).toBe(300);
  });
});
