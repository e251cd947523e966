import { AsyncLocalStorage } from 'node:async_hooks';

/** The claim a reconcile runs under, as Ripple's own helpers see it. */
export interface ReconcileScope {
  /** Aborted when the worker lost the key's lease (renewal refused or failed, deadline passed). */
  signal: AbortSignal;
  /** The claim's fencing token (queue/fence.ts). */
  token: string;
}

const scope = new AsyncLocalStorage<ReconcileScope>();

/**
 * Runs `work` so that every API request (kube/raw.ts) and Redis script (queue/run-script.ts) it makes,
 * however deep, honours the claim's signal without each call site passing it: an aborted reconcile's
 * next call fails at once instead of writing on behalf of a claim that is no longer its.
 */
export function inReconcileScope<T>(s: ReconcileScope, work: () => Promise<T>): Promise<T> {
  return scope.run(s, work);
}

/** The running reconcile's scope, if the caller runs inside one. */
export function currentReconcile(): ReconcileScope | undefined {
  return scope.getStore();
}

/** The reconcile lost its lease: what it does next must not take effect. Transient for the queue. */
export class LeaseLostError extends Error {
  override readonly name = 'LeaseLostError';
}

/** Throws LeaseLostError when the running reconcile's signal was aborted. */
export function throwIfLeaseLost(what: string): void {
  const s = scope.getStore();
  if (s?.signal.aborted) throw new LeaseLostError(`${what}: not sent, the reconcile lost its claim (${String(s.signal.reason ?? 'aborted')})`);
}

/**
 * Runs `work` outside any reconcile's scope: for what a reconcile starts but that outlives it (a
 * process-wide cache, its watches and timers). Async work started inside keeps this context, so a
 * later lease loss of the reconcile that happened to start it cannot fail its requests.
 */
export function outsideReconcileScope<T>(work: () => T): T {
  return scope.exit(work);
}
