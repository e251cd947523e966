/**
 * The planner's status (Kthena's fields and conditions) turned into the shared state engine's inputs
 * (seed 002), so a ModelServing carries both: `replicas`, `availableReplicas`, … and `Available` /
 * `Progressing` / `UpdateInProgress` as Kthena writes them, and `phase`, `Ready`, `ConfigValid`,
 * `ServingGroupsReady`, `Stalled` as every Ripple resource does. `kubectl wait --for=condition=Ready`
 * then returns once every ServingGroup is available.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { ModelServingStatus } from '../../api/modelserving.js';
import type { ConditionInput } from '../../status/conditions.js';
import type { ChildHealth, ClassifiedError, StateEngineInput } from '../../status/engine.js';
import type { Blocked } from './plan/actions.js';

/** The child whose `{Child}Ready` condition summarises the ServingGroups. */
export const SERVING_GROUPS_CHILD = 'ServingGroups';

const KTHENA_CONDITIONS = new Set(['Available', 'Progressing', 'UpdateInProgress']);

/** Kthena's status fields, written beside the engine's (each replaced whole when it changes). */
const KTHENA_FIELDS = [
  'replicas',
  'currentReplicas',
  'updatedReplicas',
  'availableReplicas',
  'currentRevision',
  'updateRevision',
  'labelSelector',
] as const satisfies ReadonlyArray<keyof ModelServingStatus>;

export interface UnifiedStatus {
  fields: Record<string, unknown>;
  input: Omit<StateEngineInput, 'previous' | 'generation' | 'now'>;
}

/**
 * Pods the scheduler has tried and refused (PodScheduled=False, Unschedulable): the cluster lacks
 * room for them, seed 002's capacity case (`Ready=False/InsufficientCapacity`, not an error).
 */
export function unschedulablePods(pods: readonly V1Pod[]): Array<{ name: string; message: string }> {
  const out: Array<{ name: string; message: string }> = [];
  for (const pod of pods) {
    if (pod.metadata?.deletionTimestamp || pod.status?.phase !== 'Pending') continue;
    const c = pod.status?.conditions?.find((x) => x.type === 'PodScheduled');
    if (c?.status === 'False' && c.reason === 'Unschedulable') out.push({ name: pod.metadata?.name ?? '', message: c.message ?? '' });
  }
  return out;
}

export function unifiedStatus(
  status: ModelServingStatus,
  problems: readonly string[],
  pods: readonly V1Pod[],
  blocked: readonly Blocked[] = [],
): UnifiedStatus {
  const fields: Record<string, unknown> = {};
  for (const key of KTHENA_FIELDS) if (status[key] !== undefined) fields[key] = status[key];

  const kthena = (status.conditions ?? []).filter((c) => KTHENA_CONDITIONS.has(c.type));
  const upstreamConditions: ConditionInput[] = kthena.map((c) => ({ type: c.type, status: c.status, reason: c.reason, message: c.message }));
  const trueOne = kthena.find((c) => c.status === 'True');

  let child: ChildHealth;
  if (trueOne?.type === 'Available') child = { name: SERVING_GROUPS_CHILD, state: 'Ready', reason: trueOne.reason };
  else if (blocked.length > 0) {
    // Part of the spec cannot be made (names over 63 characters at this many replicas, names someone
    // else holds): what exists keeps serving and is reconciled, so this is reduced capacity, not a
    // failed, terminal spec.
    child = { name: SERVING_GROUPS_CHILD, state: 'Degraded', reason: blocked[0]?.reason ?? 'Blocked', message: blocked.map((b) => b.message).join('; ') };
  } else if (problems.length > 0) {
    // Pods nobody schedules (no scheduler of that name): waiting on the cluster, not progressing.
    child = { name: SERVING_GROUPS_CHILD, state: 'Pending', reason: 'PodsNotScheduled', message: problems.join('; ') };
  } else {
    child = {
      name: SERVING_GROUPS_CHILD,
      state: 'Starting',
      reason: trueOne?.reason ?? 'GroupProgressing',
      message: trueOne?.message ?? `${status.availableReplicas ?? 0} of ${status.replicas ?? 0} ServingGroups available`,
    };
  }

  const errors: ClassifiedError[] = [];
  const stuck = child.state === 'Ready' ? [] : unschedulablePods(pods);
  if (stuck.length > 0) {
    const first = stuck[0];
    errors.push({
      class: 'Capacity',
      message: `${stuck.length} pod(s) cannot be scheduled${first?.message ? `: ${first.message}` : ''}`,
    });
  }
  return { fields, input: { children: [child], errors, upstreamConditions } };
}

/**
 * Engine inputs for a spec that cannot be run: `ConfigValid=False` with one line per problem. Kthena's
 * conditions that are present turn False with reason `InvalidSpec` (`Available` always: a Failed
 * ModelServing is never left saying Available=True, whatever its pods still do).
 */
export function invalidSpecStatus(problems: readonly string[], previous?: readonly { type: string }[]): UnifiedStatus {
  const present = new Set((previous ?? []).map((c) => c.type));
  const message = 'the spec is invalid; see ConfigValid';
  const upstreamConditions: ConditionInput[] = [...KTHENA_CONDITIONS]
    .filter((type) => type === 'Available' || present.has(type))
    .map((type) => ({ type, status: 'False', reason: 'InvalidSpec', message }));
  return {
    fields: {},
    input: {
      errors: problems.map((m) => ({ class: 'Spec' as const, message: m })),
      children: [{ name: SERVING_GROUPS_CHILD, state: 'Failed', reason: 'InvalidSpec', message }],
      upstreamConditions,
    },
  };
}
