import { patchPodMetadata, readPod, retryOnConflict } from '../pod-access/pod-api.js';
import type { LifecyclePod, PodRef } from '../pod-access/pod.js';
import * as protocol from '../protocol/index.js';
import type { MetadataHook, OperationAdapter, OperationResult, UnixNanos } from '../protocol/index.js';
import { nowNanos, PodGoneError, type LifecycleClientDeps } from './deps.js';

/** kuperator's `(updated bool, err error)`: whether this call wrote, and the Pod as it now is. */
export interface WriteOutcome {
  updated: boolean;
  pod: LifecyclePod;
}

export interface AllowOpsOutcome {
  allowed: boolean;
  /** An operation delay is running: ask again after this long. Undefined: wait for the lifecycle to grant operate. */
  requeueAfterMs?: number;
  pod: LifecyclePod;
}

export interface WriteOptions {
  /** Extra hooks run before the adapter's own (kuperator's `fns...`). */
  hooks?: readonly MetadataHook[];
}

function metadataOf(pod: LifecyclePod): protocol.PodMetadataInput {
  return { labels: pod.metadata.labels ?? {}, annotations: pod.metadata.annotations ?? {} };
}

/**
 * One read-modify-write of a Pod's lifecycle metadata: read fresh, apply the protocol step, write only if it
 * changed anything, preconditioned on the version read; on 409 start over from the newer Pod.
 */
async function readModifyWrite(
  deps: LifecycleClientDeps,
  what: string,
  ref: PodRef,
  step: (pod: protocol.PodMetadataInput, now: UnixNanos) => OperationResult,
): Promise<WriteOutcome> {
  return retryOnConflict(
    `${what} ${ref.namespace}/${ref.name}`,
    async () => {
      const pod = await readPod(deps.kc, ref);
      if (pod === undefined) throw new PodGoneError(ref);
      const result = step(metadataOf(pod), nowNanos(deps));
      if (!result.changed) return { updated: false, pod };
      return { updated: true, pod: await patchPodMetadata(deps.kc, pod, result.patch) };
    },
    deps.maxAttempts,
  );
}

/**
 * The operation-controller side of PodOpsLifecycle against the API server: the seed's Go utils
 * (Begin/AllowOps/Finish/IsDuringOps/Undo/BeginWithCleaningOld) with the adapter as plain data. Every call reads
 * the Pod fresh; every write is a read-modify-write with a resourceVersion precondition and conflict retry.
 * A missing Pod throws PodGoneError; protocol refusals throw OpsLifecycleError (exact kuperator messages).
 */
export interface OperationClient {
  /** The ID holds `operating` with the adapter's type: from begin until finish. */
  isDuringOps(ref: PodRef, adapter: OperationAdapter): Promise<boolean>;
  /** Starts the adapter's lifecycle (idempotent while it runs); `updated` false when nothing had to change. */
  begin(ref: PodRef, adapter: OperationAdapter, opts?: WriteOptions): Promise<WriteOutcome>;
  /**
   * May the operator act now? Only once the lifecycle granted `operate`, and with `operationDelaySeconds`, only
   * once that long has passed since: until then `allowed` is false and `requeueAfterMs` is the time left.
   */
  allowOps(ref: PodRef, adapter: OperationAdapter, opts?: { operationDelaySeconds?: number }): Promise<AllowOpsOutcome>;
  /** Hands the Pod back: the lifecycle moves the ID through operated, post-check and completing. */
  finish(ref: PodRef, adapter: OperationAdapter, opts?: WriteOptions): Promise<WriteOutcome>;
  /** Cancels the ID: every label of it goes, in one write. */
  undo(ref: PodRef, adapter: OperationAdapter, opts?: WriteOptions): Promise<WriteOutcome>;
  /** Undo the ID's current round (if any) and begin a fresh one, in one write. */
  beginWithCleaningOld(ref: PodRef, adapter: OperationAdapter, opts?: WriteOptions): Promise<WriteOutcome>;
}

export function operationClient(deps: LifecycleClientDeps): OperationClient {
  return {
    async isDuringOps(ref, adapter) {
      const pod = await readPod(deps.kc, ref);
      if (pod === undefined) throw new PodGoneError(ref);
      return protocol.isDuringOps(metadataOf(pod), adapter);
    },
    begin: (ref, adapter, opts) =>
      readModifyWrite(deps, 'begin', ref, (pod, now) => protocol.begin(pod, adapter, { now, hooks: opts?.hooks })),
    async allowOps(ref, adapter, opts) {
      const pod = await readPod(deps.kc, ref);
      if (pod === undefined) throw new PodGoneError(ref);
      const answer = protocol.allowOps(metadataOf(pod), adapter, { now: nowNanos(deps), operationDelaySeconds: opts?.operationDelaySeconds });
      return { ...answer, pod };
    },
    finish: (ref, adapter, opts) =>
      readModifyWrite(deps, 'finish', ref, (pod, now) => protocol.finish(pod, adapter, { now, hooks: opts?.hooks })),
    undo: (ref, adapter, opts) =>
      readModifyWrite(deps, 'undo', ref, (pod, now) => protocol.undo(pod, adapter, { now, hooks: opts?.hooks })),
    beginWithCleaningOld: (ref, adapter, opts) =>
      readModifyWrite(deps, 'beginWithCleaningOld', ref, (pod, now) => protocol.beginWithCleaningOld(pod, adapter, { now, hooks: opts?.hooks })),
  };
}
