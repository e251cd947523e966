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
import type { ConditionEvent } from '../../status/write.js';
import type { Blocked } from './plan/actions.js';
import { PROGRESS_DEADLINE_EXCEEDED } from './plan/status-deadline.js';

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
  'roles',
] as const satisfies ReadonlyArray<keyof ModelServingStatus>;

export interface UnifiedStatus {
  fields: Record<string, unknown>;
  input: Omit<StateEngineInput, 'previous' | 'generation' | 'now'>;
  /**
   * Events writeStatus sends through its outbox with the write (at least once, only if it landed):
   * the progress deadline's one Warning, when `Progressing` first gets `ProgressDeadlineExceeded`.
   */
  conditionEvents?: ConditionEvent[];
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

/** Container waiting reasons that say what is wrong with a pod (the kubelet's words), most telling first. */
const POD_PROBLEMS = ['CreateContainerConfigError', 'InvalidImageName', 'ErrImagePull', 'ImagePullBackOff', 'CrashLoopBackOff'] as const;
type PodProblemReason = (typeof POD_PROBLEMS)[number];

export interface PodProblem {
  reason: PodProblemReason;
  /** `pod <name> container <c>: <kubelet message>` */
  message: string;
  count: number;
}

/**
 * The most telling container problem among live pods (issue 13 scenario 4, seed 002 §2.1): a pull
 * that fails, a crash loop, a missing ConfigMap or Secret. Undefined when none.
 */
export function podProblem(pods: readonly V1Pod[]): PodProblem | undefined {
  const found = new Map<PodProblemReason, { message: string; count: number }>();
  for (const pod of pods) {
    if (pod.metadata?.deletionTimestamp) continue;
    for (const c of [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])]) {
      const reason = c.state?.waiting?.reason;
      if (!reason || !(POD_PROBLEMS as readonly string[]).includes(reason)) continue;
      const key = reason as PodProblemReason;
      const prev = found.get(key);
      const message = `pod ${pod.metadata?.name ?? ''} container ${c.name}: ${reason}${c.state?.waiting?.message ? `: ${c.state.waiting.message}` : ''}`;
      found.set(key, { message: prev?.message ?? message, count: (prev?.count ?? 0) + 1 });
    }
  }
  for (const reason of POD_PROBLEMS) {
    const f = found.get(reason);
    if (f) return { reason, message: f.count > 1 ? `${f.message} (and ${f.count - 1} more)` : f.message, count: f.count };
  }
  return undefined;
}

/** A pull refused for credentials (seed 002 §3.2: AuthValid), not a missing image or a slow registry. */
const PULL_AUTH = /unauthorized|authentication required|pull access denied|no basic auth credentials|401|403 Forbidden/i;

/** What the status read says about before this reconcile, to tell lost capacity from routine work. */
export interface PreviousState {
  phase?: string | undefined;
  observedGeneration?: number | undefined;
  /** `metadata.generation` now. */
  generation?: number | undefined;
}

/**
 * The spec changed since the status read was written (a rollout, a scale, an HPA's): readiness lost
 * now is the work it asks for, announced with Normal Events (issue 13 scenario 5).
 */
export function specChanged(previous: PreviousState | undefined): boolean {
  return previous?.generation !== undefined && previous.observedGeneration !== previous.generation;
}

/**
 * The spec's rollout or scale is still under way: its first reconcile (a new generation), or any later
 * one while the rollout clock runs (`status.lastProgressTime`, set until the generation completes).
 * Keyed on the clock, not on one reconcile, so a readiness loss that lands in a later reconcile of the
 * same rollout is as routine as one in the first.
 */
export function rolloutUnderWay(status: ModelServingStatus, previous: PreviousState | undefined): boolean {
  return specChanged(previous) || status.lastProgressTime !== undefined;
}

/**
 * A ModelServing that was Ready (or already Degraded) and is no longer available although its spec did
 * not change since (same generation: no rollout, no scaling, HPA's included) lost capacity: Degraded,
 * not Starting. Routine work always comes with a new generation and stays Starting.
 */
export function lostCapacity(previous: PreviousState | undefined): boolean {
  if (!previous || previous.generation === undefined || previous.observedGeneration !== previous.generation) return false;
  return previous.phase === 'Ready' || previous.phase === 'Degraded';
}

export function unifiedStatus(
  status: ModelServingStatus,
  problems: readonly string[],
  pods: readonly V1Pod[],
  blocked: readonly Blocked[] = [],
  previous?: PreviousState,
): UnifiedStatus {
  const fields: Record<string, unknown> = {};
  for (const key of KTHENA_FIELDS) if (status[key] !== undefined) fields[key] = status[key];
  // Removed once the spec's rollout or scale completed (null removes a status field).
  fields.lastProgressTime = status.lastProgressTime ?? null;

  const kthena = (status.conditions ?? []).filter((c) => KTHENA_CONDITIONS.has(c.type));
  const upstreamConditions: ConditionInput[] = kthena.map((c) => ({ type: c.type, status: c.status, reason: c.reason, message: c.message }));
  const trueOne = kthena.find((c) => c.status === 'True');

  const pod = trueOne?.type === 'Available' ? undefined : podProblem(pods);
  const stuck = kthena.find((c) => c.type === 'Progressing' && c.status === 'False' && c.reason === PROGRESS_DEADLINE_EXCEEDED);
  // While the spec's rollout or scale is in progress (its clock runs) nothing is lost: it is not done
  // yet, even when it was Degraded for passing its deadline before it moved again.
  const lost = lostCapacity(previous) && status.lastProgressTime === undefined;
  let routine = false;
  let child: ChildHealth;
  if (trueOne?.type === 'Available') child = { name: SERVING_GROUPS_CHILD, state: 'Ready', reason: trueOne.reason };
  else if (blocked.length > 0) {
    // Part of the spec cannot be made (names over 63 characters at this many replicas, names someone
    // else holds): what exists keeps serving and is reconciled, so this is reduced capacity, not a
    // failed, terminal spec.
    child = { name: SERVING_GROUPS_CHILD, state: 'Degraded', reason: blocked[0]?.reason ?? 'Blocked', message: blocked.map((b) => b.message).join('; ') };
  } else if (stuck) {
    // A rollout or scale past its progress deadline (Deployment semantics): Degraded, and Stalled so
    // kstatus tools read it as failed, as they read a Deployment's ProgressDeadlineExceeded. Why the
    // groups are stuck, when the pods say, follows the groups' names.
    const why = pod?.message ?? unschedulableSummary(pods) ?? problems.join('; ');
    child = {
      name: SERVING_GROUPS_CHILD,
      state: 'Degraded',
      reason: PROGRESS_DEADLINE_EXCEEDED,
      message: why ? `${stuck.message}; ${why}` : stuck.message,
      stalled: true,
    };
  } else if (pod) {
    // The kubelet's own reason and words, so a user need not hunt for them in the pods.
    child = { name: SERVING_GROUPS_CHILD, state: lost ? 'Degraded' : 'Starting', reason: pod.reason, message: pod.message };
  } else if (problems.length > 0) {
    // Pods nobody schedules (no scheduler of that name): waiting on the cluster, not progressing.
    child = { name: SERVING_GROUPS_CHILD, state: 'Pending', reason: 'PodsNotScheduled', message: problems.join('; ') };
  } else if (lost) {
    child = {
      name: SERVING_GROUPS_CHILD,
      state: 'Degraded',
      reason: 'ServingGroupsUnavailable',
      message: `${status.availableReplicas ?? 0} of ${status.replicas ?? 0} ServingGroups available without a spec change: ${trueOne?.message ?? 'recovering'}`,
    };
  } else {
    child = {
      name: SERVING_GROUPS_CHILD,
      state: 'Starting',
      reason: trueOne?.reason ?? 'GroupProgressing',
      message: trueOne?.message ?? `${status.availableReplicas ?? 0} of ${status.replicas ?? 0} ServingGroups available`,
    };
    // Rolling out or scaling as the spec asks, nothing wrong: Normal Events only.
    routine = rolloutUnderWay(status, previous);
  }

  const errors: ClassifiedError[] = [];
  const unschedulable = child.state === 'Ready' ? undefined : unschedulableSummary(pods);
  if (unschedulable !== undefined) errors.push({ class: 'Capacity', message: unschedulable });
  if (pod && (pod.reason === 'ErrImagePull' || pod.reason === 'ImagePullBackOff') && PULL_AUTH.test(pod.message)) {
    errors.push({ class: 'Auth', message: pod.message, child: SERVING_GROUPS_CHILD });
  } else if (pod?.reason === 'CreateContainerConfigError') {
    errors.push({ class: 'MissingReference', message: pod.message, child: SERVING_GROUPS_CHILD });
  } else if (pod?.reason === 'InvalidImageName') {
    errors.push({ class: 'Spec', message: pod.message, child: SERVING_GROUPS_CHILD });
  }
  // One Warning when the deadline first passes; writeStatus sends it only if the status read did not
  // already say so, and through the outbox, so an emit that fails after the write is not lost.
  const conditionEvents: ConditionEvent[] = stuck
    ? [{ condition: 'Progressing', reason: PROGRESS_DEADLINE_EXCEEDED, event: { type: 'Warning', reason: PROGRESS_DEADLINE_EXCEEDED, message: stuck.message } }]
    : [];
  return {
    fields,
    input: { children: [child], errors, upstreamConditions, ...(routine ? { routine } : {}) },
    ...(conditionEvents.length > 0 ? { conditionEvents } : {}),
  };
}

function unschedulableSummary(pods: readonly V1Pod[]): string | undefined {
  const stuck = unschedulablePods(pods);
  if (stuck.length === 0) return undefined;
  return `${stuck.length} pod(s) cannot be scheduled${stuck[0]?.message ? `: ${stuck[0].message}` : ''}`;
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
