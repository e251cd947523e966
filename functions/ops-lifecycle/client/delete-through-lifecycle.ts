import { deletePodExactly, patchPodMetadata, readPod, retryOnConflict } from '../pod-access/pod-api.js';
import type { LifecyclePod, PodRef } from '../pod-access/pod.js';
import { podChanged, wakeOnPodChange } from '../pod-access/pod-wake.js';
import { createLogger, type Logger } from '../../../base/log.js';
import {
  allowOps,
  begin,
  clearPreparingToDelete,
  CONTROL_LABEL,
  CONTROL_LABEL_VALUE,
  isControlled,
  markPreparingToDelete,
  OperationTypes,
  undo,
  type OperationAdapter,
} from '../protocol/index.js';
import { nowNanos, type LifecycleClientDeps } from './deps.js';

/**
 * The adapter an owner (ModelServing) deletes its Pods with: one ID for the owner, so its rounds never pile up
 * on a Pod, and `preparing-to-delete` announced on begin (taken back on cancel) like kuperator's delete and
 * scale-in adapters. Use one type per ID: begin refuses an ID that is running under another type.
 */
export function deletionAdapter(id = 'modelserving', type: string = OperationTypes.delete): OperationAdapter {
  return { id, type, allowMultiType: true, whenBegin: markPreparingToDelete, whenUndo: clearPreparingToDelete };
}

export interface DeleteThroughLifecycleOptions {
  /** Default deletionAdapter(). */
  adapter?: OperationAdapter;
  /** Wait this long after `operate` was granted before deleting. */
  operationDelaySeconds?: number;
  /**
   * Poll instead of waiting on a watch: while waiting on the lifecycle or on cooperators, the answers say to ask
   * again after this long, and no watch is made. Without it (and without `wokenByPodEvents` or `wake`) the wait
   * is event-driven: the waiting answers carry `waitForChange` and only a slow fallback `requeueAfterMs`.
   */
  pollMs?: number;
  /**
   * A Pod without `kusionstack.io/control=true` (created before its owner opted in): `enrol` (default) adds the
   * label in the same write as begin, so cooperators that read the service-ready condition drain it before it
   * goes; `delete` deletes it at once, as nothing would advance a lifecycle (use it when no ops-lifecycle runs).
   */
  uncontrolled?: 'enrol' | 'delete';
  /**
   * The owner is reconciled on its Pods' label changes (ModelServing's triggers are): while the lifecycle starts
   * and cooperators drain, every step that ends the wait is a label write on the Pod, so no timer is needed. The
   * waiting answers then carry `requeueAfterMs: Infinity` (no requeue) except during an operation delay.
   */
  wokenByPodEvents?: boolean;
  /**
   * Event-driven waiting for an owner that is not woken by its Pods' changes: while the answer is `waiting`, the
   * namespace's pod cache or a watch of exactly this Pod (pod-access/pod-wake.ts) calls `onChange` once the Pod
   * changes (typically: enqueue the owner), so the owner reads the Pod once per change instead of once per
   * `pollMs`. The waiting answers then carry `fallbackPollMs` (default 60 s), only in case the watch is lost.
   */
  wake?: { onChange: () => Promise<void>; log: Logger; fallbackPollMs?: number };
}

/** The slow requeue of an owner woken by a watch of its Pod (opts.wake, or the default `waitForChange`), in case that watch is lost. */
export const WAKE_FALLBACK_POLL_MS = 60_000;

let clientLog: Logger | undefined;

export type DeleteThroughLifecycleResult =
  | {
      state: 'deleted';
      /** gone: no such Pod (or another uid); deleting: already being deleted; deleted: deleted now; uncontrolled:
       * deleted now without a lifecycle, because the Pod does not take part in one (`uncontrolled: 'delete'`). */
      how: 'gone' | 'deleting' | 'deleted' | 'uncontrolled';
    }
  | {
      state: 'waiting';
      /** Begun: the lifecycle was just started; Preparing: cooperators are draining the Pod; OperationDelay. */
      stage: 'Begun' | 'Preparing' | 'OperationDelay';
      requeueAfterMs: number;
      /**
       * The default, event-driven wait (no `pollMs`, `wokenByPodEvents` or `wake`) while Begun or Preparing:
       * resolves once the Pod changes past the version this answer was made from (seen by the namespace's pod
       * cache, or by a watch of exactly that Pod: pod-access/pod-wake.ts), or after requeueAfterMs at the latest. Lazy: the watch is opened (or joined) only
       * when this is called, so a caller that just requeues costs none. Await it, then call again. Pass the
       * handler's signal (ctx.signal): on abort it rejects with the signal's reason at once and lets the watch go
       * if nobody else waits on it; it never rejects otherwise.
       */
      waitForChange?: (signal?: AbortSignal) => Promise<void>;
    };

/**
 * Deletes a Pod the PodOpsLifecycle way, as one non-blocking step of the owner's reconcile:
 * begin → (wait until allowOps) → delete. Call it until it answers `deleted`; while it answers `waiting`, await its
 * `waitForChange(ctx.signal)` (the default), or return its requeueAfterMs from a reconcile woken by `wake` or by its Pods' events. Every write is preconditioned (the delete on uid and resourceVersion), so
 * a Pod a cooperator took back in between is not deleted. A Pod without `kusionstack.io/control=true` is enrolled
 * in the same write as begin (opts.uncontrolled).
 */
export async function deleteThroughLifecycle(
  deps: LifecycleClientDeps,
  ref: PodRef,
  opts: DeleteThroughLifecycleOptions = {},
): Promise<DeleteThroughLifecycleResult> {
  const adapter = opts.adapter ?? deletionAdapter();
  const mode = opts.wokenByPodEvents ? 'woken' : opts.wake ? 'wake' : opts.pollMs !== undefined ? 'poll' : 'changed';
  const pollMs =
    mode === 'woken' ? Number.POSITIVE_INFINITY : mode === 'wake' ? (opts.wake?.fallbackPollMs ?? WAKE_FALLBACK_POLL_MS) : mode === 'poll' ? (opts.pollMs ?? 2_000) : WAKE_FALLBACK_POLL_MS;
  // Waiting on a Pod version: with opts.wake its next change wakes the owner; by default the answer offers to await it.
  const waiting = (pod: LifecyclePod, stage: 'Begun' | 'Preparing'): DeleteThroughLifecycleResult => {
    if (mode === 'wake' && opts.wake) wakeOnPodChange(deps.kc, pod, opts.wake.log, opts.wake.onChange);
    if (mode !== 'changed') return { state: 'waiting', stage, requeueAfterMs: pollMs };
    const waitForChange = (signal?: AbortSignal): Promise<void> =>
      podChanged(deps.kc, pod, (clientLog ??= createLogger('ops-lifecycle-client')), pollMs, signal);
    return { state: 'waiting', stage, requeueAfterMs: pollMs, waitForChange };
  };
  return retryOnConflict(
    `delete through lifecycle ${ref.namespace}/${ref.name}`,
    async (): Promise<DeleteThroughLifecycleResult> => {
      const pod = await readPod(deps.kc, ref);
      if (pod === undefined) return { state: 'deleted', how: 'gone' };
      if (pod.metadata.deletionTimestamp !== undefined) return { state: 'deleted', how: 'deleting' };
      const current = pod.metadata.labels ?? {};
      const enrol = !isControlled(current);
      if (enrol && opts.uncontrolled === 'delete') {
        await deletePodExactly(deps.kc, pod);
        return { state: 'deleted', how: 'uncontrolled' };
      }
      // Enrolled and begun in one write: the Pod cannot gain the readiness gate in place (spec.readinessGates is
      // immutable), so its Ready will not follow the gate, but the service-ready condition the lifecycle writes
      // still drains it from cooperators that read it, and their finalizers hold the deletion.
      const labels = enrol ? { ...current, [CONTROL_LABEL]: CONTROL_LABEL_VALUE } : current;
      const now = nowNanos(deps);
      const metadata = { labels, annotations: pod.metadata.annotations ?? {} };
      // begin is idempotent while the ID runs: calling it every time also restores a whenBegin mark someone removed.
      const begun = begin(metadata, adapter, { now });
      if (begun.changed || enrol) {
        const patch = enrol ? { ...begun.patch, labels: { ...begun.patch.labels, set: { ...begun.patch.labels.set, [CONTROL_LABEL]: CONTROL_LABEL_VALUE } } } : begun.patch;
        const written = await patchPodMetadata(deps.kc, pod, patch);
        return waiting(written, 'Begun');
      }
      const answer = allowOps(metadata, adapter, { now, operationDelaySeconds: opts.operationDelaySeconds });
      if (!answer.allowed) {
        return answer.requeueAfterMs !== undefined
          ? { state: 'waiting', stage: 'OperationDelay', requeueAfterMs: answer.requeueAfterMs }
          : waiting(pod, 'Preparing');
      }
      await deletePodExactly(deps.kc, pod);
      return { state: 'deleted', how: 'deleted' };
    },
    deps.maxAttempts,
  );
}

/**
 * The owner changed its mind (scaled back up, rolled back): cancel its lifecycle on the Pod so the Pod returns to
 * service. Returns false when there was nothing to cancel.
 */
export async function cancelDeleteThroughLifecycle(
  deps: LifecycleClientDeps,
  ref: PodRef,
  opts: { adapter?: OperationAdapter } = {},
): Promise<boolean> {
  const adapter = opts.adapter ?? deletionAdapter();
  return retryOnConflict(
    `cancel delete through lifecycle ${ref.namespace}/${ref.name}`,
    async () => {
      const pod = await readPod(deps.kc, ref);
      if (pod === undefined || pod.metadata.deletionTimestamp !== undefined) return false;
      const undone = undo({ labels: pod.metadata.labels ?? {}, annotations: pod.metadata.annotations ?? {} }, adapter, { now: nowNanos(deps) });
      if (!undone.changed) return false;
      await patchPodMetadata(deps.kc, pod, undone.patch);
      return true;
    },
    deps.maxAttempts,
  );
}
