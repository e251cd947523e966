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
import type { ModelServing } from '../../api/modelserving.js';
import { LABEL_NAME } from './plan/names.js';

export const LIFECYCLE_OPT_IN_ANNOTATION = 'ripple.dev/pod-ops-lifecycle';

/** The lifecycle ID and type ModelServing's deletions run under (one ID per owner, as kuperator's adapters). */
export const MODELSERVING_DELETION = deletionAdapter('modelserving');

/**
 * How this function deletes through the lifecycle: its pods' label changes wake it (triggers.ts), so waits on the
 * lifecycle and on cooperators are event-driven; `pollMs` remains only for an operation delay's timer.
 */
export const MODELSERVING_DELETE_OPTIONS = (pollMs: number) => ({ adapter: MODELSERVING_DELETION, pollMs, wokenByPodEvents: true });

export function lifecycleOptedIn(ms: Pick<ModelServing, 'metadata'>): boolean {
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

function finalizersOf(ms: Pick<ModelServing, 'metadata'>): string[] {
  const parsed = z.array(z.string()).safeParse(ms.metadata.finalizers);
  return parsed.success ? parsed.data : [];
}

/**
 * The ModelServing's finalizer list as it should be while it is not being deleted, or undefined when it already
 * is: held while opted in, let go when it opts out (its pods are then deleted outright anyway).
 */
export function deletionFinalizers(ms: Pick<ModelServing, 'metadata'>): string[] | undefined {
  if (ms.metadata.deletionTimestamp) return undefined;
  const current = finalizersOf(ms);
  const has = current.includes(LIFECYCLE_DELETION_FINALIZER);
  const want = lifecycleOptedIn(ms);
  if (want && !has) return [...current, LIFECYCLE_DELETION_FINALIZER];
  if (!want && has) return current.filter((f) => f !== LIFECYCLE_DELETION_FINALIZER);
  return undefined;
}

/**
 * Writes the finalizer list, preconditioned on the version it was planned from (the list is replaced whole; a
 * 409 is retried by the queue from the newer ModelServing). A ModelServing gone meanwhile needs nothing.
 */
async function writeFinalizers(kc: KubeConfig, ms: Pick<ModelServing, 'metadata'>, finalizers: string[]): Promise<void> {
  try {
    await kubeRequest(kc, objectPath(Resources.modelServing, ms.metadata.namespace, ms.metadata.name), {
      method: 'PATCH',
      body: { metadata: { resourceVersion: ms.metadata.resourceVersion, finalizers } },
      contentType: 'application/merge-patch+json',
    });
  } catch (err) {
    if (!isStatus(err, 404)) throw err;
  }
}

/** Adds or removes the deletion finalizer when the opt-in says so; a no-op (no request) otherwise. */
export async function keepDeletionFinalizer(kc: KubeConfig, ms: Pick<ModelServing, 'metadata'>): Promise<void> {
  const next = deletionFinalizers(ms);
  if (next !== undefined) await writeFinalizers(kc, ms, next);
}

const podListSchema = z.object({
  items: z.array(z.object({ metadata: objectMetaSchema }).passthrough()),
});

/**
 * One step of draining a ModelServing that is being deleted and holds the finalizer: every pod it controls is
 * deleted through PodOpsLifecycle (fresh LIST: a stale view could let go of the finalizer while a pod still
 * serves); once none is left, the finalizer goes and the owner's deletion completes. Returns when to look again
 * while pods wait on their lifecycle (their label changes also bring the ModelServing back).
 */
export async function drainOnDeletion(
  deps: { kc: KubeConfig; now: () => Date },
  ms: Pick<ModelServing, 'metadata'>,
  pollMs: number,
): Promise<{ requeueAfterMs: number } | undefined> {
  const finalizers = finalizersOf(ms);
  if (!ms.metadata.deletionTimestamp || !finalizers.includes(LIFECYCLE_DELETION_FINALIZER)) return undefined;
  const namespace = ms.metadata.namespace ?? '';
  const list = podListSchema.parse(
    await kubeRequest(deps.kc, collectionPath(Resources.pod, namespace), { query: { labelSelector: `${LABEL_NAME}=${ms.metadata.name}` } }),
  );
  const owned = list.items.filter((p) => p.metadata.ownerReferences?.some((o) => o.controller === true && o.uid === ms.metadata.uid));
  const results = await Promise.all(
    owned.map((p) =>
      deleteThroughLifecycle(deps, { namespace, name: p.metadata.name, ...(p.metadata.uid ? { uid: p.metadata.uid } : {}) }, MODELSERVING_DELETE_OPTIONS(pollMs)),
    ),
  );
  const waits = results.flatMap((r) => (r.state === 'waiting' ? [r.requeueAfterMs] : []));
  if (waits.length > 0) {
    // Event-driven waits (Infinity) need no requeue: the pods' label changes bring the ModelServing back.
    const soonest = Math.min(...waits);
    return Number.isFinite(soonest) ? { requeueAfterMs: soonest } : undefined;
  }
  await writeFinalizers(deps.kc, ms, finalizers.filter((f) => f !== LIFECYCLE_DELETION_FINALIZER));
  return undefined;
}
