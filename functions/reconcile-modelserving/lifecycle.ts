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
import type { V1Pod } from '@kubernetes/client-node';
import { deletionAdapter, withLifecycle } from '../ops-lifecycle/client/index.js';
import { LabelPrefix } from '../ops-lifecycle/protocol/index.js';
import type { ModelServing } from '../../api/modelserving.js';

export const LIFECYCLE_OPT_IN_ANNOTATION = 'ripple.dev/pod-ops-lifecycle';

/** The lifecycle ID and type ModelServing's deletions run under (one ID per owner, as kuperator's adapters). */
export const MODELSERVING_DELETION = deletionAdapter('modelserving');

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
