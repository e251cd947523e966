import { describe, expect, it } from 'vitest';
import type * as errors from '../base/errors.js';
import { TerminalError, isTerminal } from '../base/errors.js';
import type * as reconcileScope from '../base/reconcile-scope.js';
import { currentReconcile, inReconcileScope, type ReconcileScope } from '../base/reconcile-scope.js';

// A function module that resolved a copy of Ripple of its own (its own node_modules/ripple beside the one the
// `ripple` command runs) throws that copy's errors and calls that copy's helpers. A second import of the same
// file under another URL is such a copy: a module instance of its own, with its own classes and module state.
async function secondCopy<T>(file: string): Promise<T> {
  return (await import(/* @vite-ignore */ `${new URL(file, import.meta.url).href}?second-copy`)) as T;
}

describe('a second copy of Ripple in the process', () => {
  it("its TerminalError is terminal for this copy's queue, and a plain Error named so without a reason is not", async () => {
    const other = await secondCopy<typeof errors>('../base/errors.ts');
    expect(other.TerminalError).not.toBe(TerminalError);
    const err = new other.TerminalError('spec.x is wrong', 'InvalidX');
    expect(err).not.toBeInstanceOf(TerminalError);
    expect(isTerminal(err)).toBe(true);
    const impostor = new Error('named only');
    impostor.name = 'TerminalError';
    expect(isTerminal(impostor)).toBe(false);
  });

  it("its helpers see the claim this copy's worker runs the handler under", async () => {
    const other = await secondCopy<typeof reconcileScope>('../base/reconcile-scope.ts');
    expect(other.currentReconcile).not.toBe(currentReconcile);
    const scope: ReconcileScope = { signal: AbortSignal.abort('lost'), token: 't-1', sendBy: 0, aliveUntil: 0 };
    await inReconcileScope(scope, async () => {
      expect(other.currentReconcile()?.token).toBe('t-1');
      // The other copy's fence refuses to send on a lost claim, as this copy's does.
      expect(() => other.throwIfLeaseLost('PATCH x')).toThrow(/not sent, the reconcile lost its claim/);
    });
    expect(other.currentReconcile()).toBeUndefined();
  });
});
