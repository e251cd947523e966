import { describe, expect, it } from 'vitest';
import { currentReconcile, inReconcileScope, LeaseLostError, outsideReconcileScope, throwIfLeaseLost } from './reconcile-scope.js';

describe('outsideReconcileScope', () => {
  it('runs work, and the async work and timers it starts, outside the reconcile that called it', async () => {
    const lost = new AbortController();
    const later = await inReconcileScope({ signal: lost.signal, token: 't' }, async () => {
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
    const inside = await inReconcileScope({ signal: lost.signal, token: 't' }, async () => threw());
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
