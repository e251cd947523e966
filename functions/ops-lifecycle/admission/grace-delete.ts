import type { KubeConfig } from '@kubernetes/client-node';
import type { AdmissionDecision } from '../../../runtime/webhook/admission-review.js';
import type { AdmissionWebhookDefinition } from '../../../runtime/webhook/types.js';
import { deletionAdapter } from '../client/delete-through-lifecycle.js';
import { operationClient } from '../client/operation.js';
import {
  allowOps,
  clearPreparingToDelete,
  CONTROL_LABEL,
  CONTROL_LABEL_VALUE,
  hasServiceReadyGate,
  idToLabelsMapLenient,
  isControlled,
  isDuringOps,
  isPodReady,
  markPreparingToDelete,
  nanosFromDate,
  OperationTypes,
  perIdKey,
  protectionFinalizers,
  type MetadataHook,
  type OperationAdapter,
  type PodState,
  type UnixNanos,
} from '../protocol/index.js';
import { admittedPodSchema, admittedPodState } from './admitted-pod.js';

/**
 * Marks a `pod-delete` round as begun by GraceDelete (kuperator marks its PodDeletion rounds by who begins them;
 * Ripple needs a mark on the Pod, since the lifecycle function that finishes the delete is another process): the
 * value is the round's `operating` timestamp, so the mark names that round only. A user's own `pod-delete` round,
 * or one begun after GraceDelete's was undone by a client that left the annotation behind, carries another
 * timestamp and is never deleted by Ripple.
 */
export const GRACE_DELETE_ANNOTATION = 'ops-lifecycle.ripple.dev/grace-delete';

const POD_DELETE_ID = 'pod-delete';

const markGraceDelete: MetadataHook = (draft) => {
  const begunAt = draft.labels[perIdKey('operating', POD_DELETE_ID)];
  if (begunAt !== undefined) draft.annotations[GRACE_DELETE_ANNOTATION] = begunAt;
};

const clearGraceDelete: MetadataHook = (draft) => {
  delete draft.annotations[GRACE_DELETE_ANNOTATION];
};

/**
 * kuperator's PodDeletion adapter (ID `pod-delete`, type `delete`, preparing-to-delete marked on begin), plus
 * Ripple's mark of the round (GRACE_DELETE_ANNOTATION), taken back on undo like preparing-to-delete.
 */
export const GRACE_DELETE_ADAPTER = {
  ...deletionAdapter(POD_DELETE_ID, 'delete'),
  whenBegin: (draft, ctx) => {
    markPreparingToDelete(draft, ctx);
    markGraceDelete(draft, ctx);
  },
  whenUndo: (draft, ctx) => {
    clearPreparingToDelete(draft, ctx);
    clearGraceDelete(draft, ctx);
  },
} satisfies OperationAdapter;

/**
 * Whether the lifecycle should now delete this Pod for the caller whose DELETE GraceDelete refused (pure): its
 * `pod-delete` round is the one GraceDelete began (GRACE_DELETE_ANNOTATION names its `operating` timestamp), runs
 * type `delete`, and holds `operate`; the Pod is not already being deleted. kuperator's PodDeletion controller
 * deletes it at that point; without this the caller had to delete again.
 */
export function graceDeleteDue(pod: PodState, now: UnixNanos): boolean {
  if (pod.deleting || !isGraceDeleteRound(pod)) return false;
  return allowOps(pod, { id: POD_DELETE_ID, type: OperationTypes.delete }, { now }).allowed;
}

export type GraceDeleteVerdict =
  | { allow: true; why: 'not controlled' | 'no service-ready gate' | 'granted' | 'out of service' }
  | { allow: false; begin: boolean; message: string };

/**
 * What to do with a DELETE of this Pod (kuperator's GraceDelete, pure). A controlled Pod with the gate is
 * deleted only once a delete operation on it (`pod-delete`, or any other ID of type `delete`) was granted
 * operate; until then the delete is refused and, if no delete operation runs, `pod-delete` begun. Unlike kuperator, a Pod that is out of service (not Ready, no protection
 * finalizer, no delete operation under way) is let go at once: there is no traffic to drain, and refusing
 * would only make a Pod that never served run a whole lifecycle first.
 */
export function graceDeleteVerdict(pod: PodState, now: UnixNanos): GraceDeleteVerdict {
  if (!isControlled(pod.labels)) return { allow: true, why: 'not controlled' };
  // kuperator's rule: without the gate the lifecycle cannot take the Pod out of service, so it does not try.
  if (!hasServiceReadyGate(pod)) return { allow: true, why: 'no service-ready gate' };
  // Any delete operation counts, not only pod-delete: deleteThroughLifecycle runs under its owner's ID, and a
  // delete it was granted must not be refused (nor a second delete round begun).
  const deletes = deleteOperationIds(pod);
  if (deletes.some((id) => allowOps(pod, { id, type: GRACE_DELETE_ADAPTER.type }, { now }).allowed)) return { allow: true, why: 'granted' };
  const begun = deletes.length > 0;
  const holding = protectionFinalizers(pod.finalizers);
  if (!begun && holding.length === 0 && !isPodReady(pod)) return { allow: true, why: 'out of service' };
  const waiting = holding.length > 0 ? `, waiting for the protection finalizers ${holding.join(', ')}` : '';
  const id = deletes[0] ?? GRACE_DELETE_ADAPTER.id;
  // The round this refusal begins, or one it began before, is finished by the lifecycle (graceDeleteDue); any
  // other delete round belongs to its operator, which deletes the Pod itself.
  const lifecycleDeletes = !begun || isGraceDeleteRound(pod);
  const then = lifecycleDeletes
    ? `the lifecycle deletes it once operate.podopslifecycle.kusionstack.io/${id} is on it (no need to delete again)`
    : `delete it again once operate.podopslifecycle.kusionstack.io/${id} is on it`;
  return {
    allow: false,
    begin: !begun,
    message: `pod deletion is underway through PodOpsLifecycle (lifecycle ${id}, type ${GRACE_DELETE_ADAPTER.type})${waiting}: the Pod is taken out of service first; ${then}`,
  };
}

/** The Pod's `pod-delete` round is the one GraceDelete began (GRACE_DELETE_ANNOTATION names its `operating` timestamp). */
function isGraceDeleteRound(pod: PodState): boolean {
  const begunAt = pod.labels[perIdKey('operating', POD_DELETE_ID)];
  return begunAt !== undefined && pod.annotations[GRACE_DELETE_ANNOTATION] === begunAt;
}

/** The IDs running an operation of type `delete` (between begin and finish), pod-delete first. */
function deleteOperationIds(pod: PodState): string[] {
  const ids = [...idToLabelsMapLenient(pod.labels).ids.keys()].filter((id) => isDuringOps(pod, { id, type: GRACE_DELETE_ADAPTER.type }));
  return ids.sort((a, b) => (a === GRACE_DELETE_ADAPTER.id ? -1 : b === GRACE_DELETE_ADAPTER.id ? 1 : a < b ? -1 : a > b ? 1 : 0));
}

/**
 * `pod-grace-delete.ops-lifecycle.ripple.dev`: Pod DELETE through the lifecycle. It writes (it begins the delete
 * operation on the Pod, through the API server, with a resourceVersion precondition), so it declares
 * NoneOnDryRun and writes nothing for a dry run. failurePolicy Ignore: while it is down, deletes go through at
 * once, as without it.
 */
export function graceDeleteWebhook(deps: { kc: KubeConfig }): AdmissionWebhookDefinition {
  const ops = operationClient({ kc: deps.kc });
  return {
    name: 'pod-grace-delete.ops-lifecycle.ripple.dev',
    path: 'ops-lifecycle/pod-grace-delete',
    rules: [{ operations: ['DELETE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
    objectSelector: { matchLabels: { [CONTROL_LABEL]: CONTROL_LABEL_VALUE } },
    namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', 'kube-node-lease'] }] },
    failurePolicy: 'Ignore',
    // The write to begin the operation is one preconditioned patch, retried on conflict.
    timeoutSeconds: 10,
    sideEffects: 'NoneOnDryRun',
    admit: async (req, now): Promise<AdmissionDecision> => {
      if (req.operation !== 'DELETE') return { allowed: true };
      const parsed = admittedPodSchema.safeParse(req.oldObject);
      if (!parsed.success || parsed.data.metadata.name === undefined || req.namespace === undefined) return { allowed: true };
      const verdict = graceDeleteVerdict(admittedPodState(parsed.data), nanosFromDate(now));
      if (verdict.allow) return { allowed: true };
      if (verdict.begin && req.dryRun !== true) {
        const uid = parsed.data.metadata.uid;
        // The API server always sends the stored Pod with its uid; a review without it did not come from there,
        // and beginning without the uid precondition could act on another Pod of the same name.
        if (!uid) return { allowed: false, message: 'the review\'s oldObject has no metadata.uid: not beginning a delete operation; retry the delete' };
        try {
          await ops.begin({ namespace: req.namespace, name: parsed.data.metadata.name, uid }, GRACE_DELETE_ADAPTER);
        } catch (err) {
          return { allowed: false, message: `pod deletion through PodOpsLifecycle could not begin: ${err instanceof Error ? err.message : String(err)}; retry the delete` };
        }
      }
      return { allowed: false, message: verdict.message };
    },
  };
}
