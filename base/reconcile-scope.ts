import { AsyncLocalStorage } from 'node:async_hooks';

/** The claim a reconcile runs under, as Ripple's own helpers see it. */
export interface ReconcileScope {
  /** Aborted when the worker lost the key's lease (renewal refused or failed, deadline passed). */
  signal: AbortSignal;
  /** The claim's fencing token (queue/fence.ts). */
  token: string;
  /**
   * Local time (ms) after which nothing may be sent on behalf of the claim: its lease's confirmed end
   * less the send margin (queue/lease.ts). Read on every check: a renewal moves it.
   */
  readonly sendBy: number;
  /** Local time (ms) by which the claim's lease has surely run out in Redis unless renewed since. */
  readonly aliveUntil: number;
}

// One per process, not per copy of this module: a function module that resolved a copy of Ripple of its own
// (its own node_modules/ripple) calls that copy's kubeRequest and whileClaimed, which must see the claim the
// worker's copy set.
const SCOPE = Symbol.for('ripple.reconcileScope');
const scope = ((globalThis as { [SCOPE]?: AsyncLocalStorage<ReconcileScope> })[SCOPE] ??= new AsyncLocalStorage<ReconcileScope>());

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

/**
 * Throws LeaseLostError when the running reconcile may no longer send anything: its signal was aborted,
 * or its lease's send deadline has passed by the clock. The clock matters as much as the signal: the
 * signal is aborted by a timer, and after a pause (GC, SIGSTOP, a blocked loop) Node runs I/O callbacks
 * and microtasks before overdue timers, so a handler resuming from an awaited GET would otherwise see
 * `aborted === false` and write on a lease that ran out while it slept (docs/kernel.md, "Effects").
 */
export function throwIfLeaseLost(what: string): void {
  const s = scope.getStore();
  if (!s) return;
  if (s.signal.aborted) throw new LeaseLostError(`${what}: not sent, the reconcile lost its claim (${String(s.signal.reason ?? 'aborted')})`);
  const late = Date.now() - s.sendBy;
  if (late >= 0) throw new LeaseLostError(`${what}: not sent, the reconcile's lease ran out ${late} ms ago by this process's clock`);
}

/**
 * How long a request sent now on behalf of the running reconcile may wait for its answer: never past the
 * lease's end, so a handler does not act on an answer that came after its claim could have moved on.
 * `limitMs` when outside a reconcile (0 stays 0: no timeout).
 */
export function requestTimeoutMs(limitMs: number): number {
  const s = scope.getStore();
  if (!s) return limitMs;
  const left = Math.max(1, s.aliveUntil - Date.now());
  return limitMs > 0 ? Math.min(limitMs, left) : left;
}

/**
 * Runs a request that does not go through Ripple's own clients (a typed @kubernetes/client-node call) as if
 * it did: not started once the reconcile may no longer send, and given up (LeaseLostError) when the claim is
 * lost while it waits, so a reconcile that lost its lease does not run on to its end.
 */
export async function whileClaimed<T>(what: string, work: () => Promise<T>): Promise<T> {
  throwIfLeaseLost(what);
  const s = scope.getStore();
  if (!s) return work();
  const signal = s.signal;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new LeaseLostError(`${what}: given up, the reconcile lost its claim (${String(signal.reason ?? 'aborted')})`));
    signal.addEventListener('abort', onAbort, { once: true });
    work().then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * Runs `work` outside any reconcile's scope: for what a reconcile starts but that outlives it (a
 * process-wide cache, its watches and timers). Async work started inside keeps this context, so a
 * later lease loss of the reconcile that happened to start it cannot fail its requests.
 */
export function outsideReconcileScope<T>(work: () => T): T {
  return scope.exit(work);
}
