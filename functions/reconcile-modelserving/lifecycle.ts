/**
 * PodOpsLifecycle opt-in (seed 001, issue 7). A ModelServing annotated
 * `ripple.dev/pod-ops-lifecycle: "true"` creates its pods enrolled in the lifecycle (control label and
 * the service-ready readiness gate) and deletes every pod through it: begin → wait for `operate` →
 * delete, so cooperators (load balancers, registries) can drain a pod before it goes.
 *
 * A pod whose deletion this function has begun is still Running and Ready while its cooperators drain
 * it. For planning it is shown as terminating: it is going away, its ServingGroup or role instance is
 * Deleting, its name stays taken and the rolling-update budget counts it as unavailable. Without
 * that, every reconcile during the drain would see the group as healthy and could pick another one.
 */
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import { z } from 'zod';
import { objectMetaSchema } from '../../kube/object.js';
import { isStatus, kubeRequest } from '../../kube/raw.js';
import { collectionPath, objectPath, Resources } from '../../kube/resources.js';
import { deleteThroughLifecycle, deletionAdapter, withLifecycle } from '../ops-lifecycle/client/index.js';
import { LabelPrefix } from '../ops-lifecycle/protocol/index.js';
import { LABEL_NAME } from './plan/names.js';

export const LIFECYCLE_OPT_IN_ANNOTATION = 'ripple.dev/pod-ops-lifecycle';

/** The lifecycle ID and type ModelServing's deletions run under (one ID per owner, as kuperator's adapters). */
export const MODELSERVING_DELETION = deletionAdapter('modelserving');

/**
 * How this function deletes through the lifecycle: its pods' label changes wake it (triggers.ts), so waits on the
 * lifecycle and on cooperators are event-driven; only an operation delay asks to be run again, when it ends.
 */
export const MODELSERVING_DELETE_OPTIONS = { adapter: MODELSERVING_DELETION, wokenByPodEvents: true };

export function lifecycleOptedIn(ms: Pick<OwnerMeta, 'metadata'>): boolean {
  return ms.metadata.annotations?.[LIFECYCLE_OPT_IN_ANNOTATION]?.toLowerCase() === 'true';
}

/** A pod to create, enrolled when the ModelServing opted in. */
export function enrolled(pod: V1Pod, optedIn: boolean): V1Pod {
  return optedIn ? withLifecycle(pod) : pod;
}

/** This function began deleting the pod through the lifecycle and the pod is not deleted yet. */
export function deletionInProgress(pod: V1Pod): boolean {
  const labels = pod.metadata?.labels ?? {};
  return (
    !pod.metadata?.deletionTimestamp &&
    labels[`${LabelPrefix.operating}/${MODELSERVING_DELETION.id}`] !== undefined &&
    labels[`${LabelPrefix.operationType}/${MODELSERVING_DELETION.id}`] === MODELSERVING_DELETION.type
  );
}

export interface PendingDelete {
  name: string;
  uid: string;
}

/**
 * The pods as the planner should see them (lifecycle deletions shown as terminating, marked at
 * `now`), and the deletions to drive on.
 */
export function maskLifecycleDeletions(pods: readonly V1Pod[], now: Date): { pods: V1Pod[]; pending: PendingDelete[] } {
  const pending: PendingDelete[] = [];
  const out = pods.map((pod) => {
    if (!deletionInProgress(pod)) return pod;
    pending.push({ name: pod.metadata?.name ?? '', uid: pod.metadata?.uid ?? '' });
    return { ...pod, metadata: { ...pod.metadata, deletionTimestamp: now } };
  });
  return { pods: out, pending };
}

/**
 * Held on an opted-in ModelServing so that deleting it drains its pods (scenario 5): without it the garbage
 * collector deletes the pods through their owner references the moment the ModelServing is gone, bypassing the
 * lifecycle. While it is on a ModelServing being deleted, this function deletes every pod through PodOpsLifecycle
 * and removes the finalizer once none is left; only then do the remaining children go with the owner.
 * A deletion with propagationPolicy Foreground still bypasses it: the garbage collector deletes the dependents
 * first, while the owner waits.
 */
export const LIFECYCLE_DELETION_FINALIZER = 'ripple.dev/pod-ops-lifecycle';

function finalizersOf(ms: OwnerMeta): string[] {
  const parsed = z.array(z.string()).safeParse(ms.metadata.finalizers);
  return parsed.success ? parsed.data : [];
}

/** What the finalizer upkeep and the drain read of a ModelServing: metadata only, so an invalid spec is no obstacle. */
export interface OwnerMeta {
  metadata: {
    name: string;
    namespace?: string | undefined;
    uid?: string | undefined;
    resourceVersion?: string | undefined;
    annotations?: Record<string, string> | undefined;
    finalizers?: unknown;
    deletionTimestamp?: unknown;
  };
}

/**
 * The ModelServing's finalizer list as it should be, or undefined when it needs no change: held while opted in, let
 * go when it opts out (its pods are then deleted outright anyway) — also while it is being deleted, so removing the
 * annotation lets a held deletion complete. A ModelServing being deleted never gains it (the API server refuses new
 * finalizers then), and one still opted in keeps it until the drain lets go.
 */
export function deletionFinalizers(ms: OwnerMeta): string[] | undefined {
  const current = finalizersOf(ms);
  const has = current.includes(LIFECYCLE_DELETION_FINALIZER);
  const want = lifecycleOptedIn(ms);
  if (want && !has && !ms.metadata.deletionTimestamp) return [...current, LIFECYCLE_DELETION_FINALIZER];
  if (!want && has) return current.filter((f) => f !== LIFECYCLE_DELETION_FINALIZER);
  return undefined;
}

const patchedSchema = z.object({ metadata: z.object({ resourceVersion: z.string().optional() }).passthrough() }).passthrough();

/**
 * Writes the finalizer list, preconditioned on the version it was planned from (the list is replaced whole; a
 * 409 is retried by the queue from the newer ModelServing). Returns the ModelServing's new resourceVersion, or
 * undefined when it is gone meanwhile (then nothing more is needed).
 */
async function writeFinalizers(kc: KubeConfig, ms: OwnerMeta, finalizers: string[]): Promise<string | undefined> {
  try {
    const patched = await kubeRequest(kc, objectPath(Resources.modelServing, ms.metadata.namespace, ms.metadata.name), {
      method: 'PATCH',
      body: { metadata: { resourceVersion: ms.metadata.resourceVersion, finalizers } },
      contentType: 'application/merge-patch+json',
    });
    return patchedSchema.parse(patched).metadata.resourceVersion;
  } catch (err) {
    if (!isStatus(err, 404)) throw err;
    return undefined;
  }
}

/**
 * Adds or removes the deletion finalizer when the opt-in says so (no request otherwise). Returns the metadata as it
 * now is: the finalizers written and the new resourceVersion, which later writes of the same reconcile (status)
 * must be preconditioned on, else each would fail with 409 after every opt-in or opt-out.
 */
export async function keepDeletionFinalizer<M extends OwnerMeta['metadata']>(kc: KubeConfig, ms: { metadata: M }): Promise<M> {
  const next = deletionFinalizers(ms);
  if (next === undefined) return ms.metadata;
  const resourceVersion = await writeFinalizers(kc, ms, next);
  return { ...ms.metadata, finalizers: next, ...(resourceVersion !== undefined ? { resourceVersion } : {}) };
}

const podListSchema = z.object({
  items: z.array(z.object({ metadata: objectMetaSchema }).passthrough()),
});

/** A pod the drain waits on, and where in its lifecycle it is. */
export interface DrainWait {
  pod: string;
  stage: 'Begun' | 'Preparing' | 'OperationDelay';
  requeueAfterMs: number;
}

/**
 * One step of draining a ModelServing that is being deleted and holds the finalizer while opted in: every pod it
 * controls is deleted through PodOpsLifecycle (fresh LIST: a stale view could let go of the finalizer while a pod
 * still serves); once none is left, the finalizer goes and the owner's deletion completes. Returns the pods still
 * waiting on their lifecycle (none when the drain is over or was never due); drainFollowUp says what to do about
 * them. An opted-out ModelServing's finalizer was already removed by keepDeletionFinalizer.
 */
export async function drainOnDeletion(deps: { kc: KubeConfig; now: () => Date }, ms: OwnerMeta): Promise<DrainWait[]> {
  const finalizers = finalizersOf(ms);
  if (!ms.metadata.deletionTimestamp || !lifecycleOptedIn(ms) || !finalizers.includes(LIFECYCLE_DELETION_FINALIZER)) return [];
  const namespace = ms.metadata.namespace ?? '';
  const list = podListSchema.parse(
    await kubeRequest(deps.kc, collectionPath(Resources.pod, namespace), { query: { labelSelector: `${LABEL_NAME}=${ms.metadata.name}` } }),
  );
  const owned = list.items.filter((p) => p.metadata.ownerReferences?.some((o) => o.controller === true && o.uid === ms.metadata.uid));
  const results = await Promise.all(
    owned.map(async (p): Promise<DrainWait | undefined> => {
      const r = await deleteThroughLifecycle(
        deps,
        { namespace, name: p.metadata.name, ...(p.metadata.uid ? { uid: p.metadata.uid } : {}) },
        MODELSERVING_DELETE_OPTIONS,
      );
      return r.state === 'waiting' ? { pod: p.metadata.name, stage: r.stage, requeueAfterMs: r.requeueAfterMs } : undefined;
    }),
  );
  const waiting = results.filter((w): w is DrainWait => w !== undefined);
  if (waiting.length === 0) await writeFinalizers(deps.kc, ms, finalizers.filter((f) => f !== LIFECYCLE_DELETION_FINALIZER));
  return waiting;
}

/**
 * What a drain still waiting asks for (pure). Event-driven waits (Infinity) need no requeue: the pods' label changes
 * bring the ModelServing back. But when nothing advances them — ops-lifecycle not running, a cooperator that never
 * lets go — the deletion would hang silently, so once `warnAfterMs` has passed since the deletionTimestamp the
 * answer carries a Warning naming the pods and their stage, and until then a requeue at that bound so it fires.
 */
export function drainFollowUp(
  waiting: readonly DrainWait[],
  deletionTimestamp: string,
  now: Date,
  warnAfterMs: number,
): { requeueAfterMs?: number; overdue?: string } {
  if (waiting.length === 0) return {};
  const soonest = Math.min(...waiting.map((w) => w.requeueAfterMs));
  const deletedAt = Date.parse(deletionTimestamp);
  const elapsed = Number.isNaN(deletedAt) ? 0 : now.getTime() - deletedAt;
  if (elapsed < warnAfterMs) return { requeueAfterMs: Math.max(0, Math.min(soonest, warnAfterMs - elapsed)) };
  const pods = waiting.map((w) => `${w.pod} (${w.stage})`).join(', ');
  const overdue =
    `deletion held ${Math.round(elapsed / 1000)}s by finalizer ${LIFECYCLE_DELETION_FINALIZER}: pods waiting on PodOpsLifecycle: ${pods}. ` +
    `Is ops-lifecycle running, and is a cooperator holding them? To delete without draining, remove the annotation ${LIFECYCLE_OPT_IN_ANNOTATION} ` +
    `(or, with Ripple not running, the finalizer itself; see docs/modelserving.md)`;
  return { ...(Number.isFinite(soonest) ? { requeueAfterMs: soonest } : {}), overdue };
}
