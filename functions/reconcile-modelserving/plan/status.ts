/**
 * `ModelServing.status`: counts, revisions and Kthena's conditions, computed from the ServingGroups
 * as the plan leaves them (created ones included, deleting ones counted until they are gone).
 *
 * Differences from Kthena, on purpose:
 *  - availability comes from the pods against the group's own revision's template, so a group in
 *    the middle of a RoleRollingUpdate is not available (kthena#1344) and a partition-protected group
 *    is checked against its old roles (kthena#1707);
 *  - `currentReplicas` counts groups on `currentRevision` (StatefulSet's meaning), so it equals
 *    `updatedReplicas` once the update revision becomes current, with or without a partition;
 *  - at most one of Available / Progressing / UpdateInProgress is True: exactly one until the progress
 *    deadline passes; past it `Progressing` is False (ProgressDeadlineExceeded), so none is True unless
 *    an update is still wanted (`UpdateInProgress`), as with a Deployment. `lastTransitionTime` moves
 *    only when a condition's status changes.
 */
import type { Condition, ModelServingStatus, RoleStatusSummary } from '../../../api/modelserving.js';
import { servingGroupName } from './names.js';
import { deadlineExceeded, deadlineMessage, lastProgressTime, PROGRESS_DEADLINE_EXCEEDED } from './status-deadline.js';
import { NOT_READY_LISTED } from './status-roles.js';

export interface StatusGroup {
  ordinal: number;
  /** The group's effective revision (the update revision when its pods are equivalent to it). */
  revision: string;
  deleting: boolean;
  available: boolean;
}

/**
 * `currentRevision`: kept while some group still uses it — groups being deleted included, since a
 * protected group that is being replaced (recovery, a pod that takes its time to terminate) comes
 * back on currentRevision, and it must still be current (with its ControllerRevision kept) when it
 * does — and while a protected ordinal (below `protectedOrdinals`) is missing, for the same reason.
 * Otherwise the update revision once every group is updated (or there are none), else the most
 * common old revision (ties: lowest name).
 */
export function currentRevisionOf(
  groups: readonly StatusGroup[],
  updateRevision: string,
  previous: string | undefined,
  protectedOrdinals = 0,
): string {
  const counts = new Map<string, number>();
  for (const g of groups) if (g.revision !== updateRevision) counts.set(g.revision, (counts.get(g.revision) ?? 0) + 1);
  if (previous && counts.has(previous)) return previous;
  if (previous && previous !== updateRevision && protectedOrdinals > 0) {
    const held = new Set(groups.map((g) => g.ordinal));
    for (let o = 0; o < protectedOrdinals; o++) if (!held.has(o)) return previous;
  }
  if (counts.size === 0) return updateRevision;
  return [...counts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0]?.[0] ?? updateRevision;
}

export interface ConditionInputs {
  groups: readonly StatusGroup[];
  updateRevision: string;
  partition: number;
  /** Extra explanation for a progressing ModelServing (e.g. pods no scheduler has picked up). */
  problems: readonly string[];
  /** Parts of the spec that cannot be made (names too long): the ModelServing is not Available while any. */
  blocked?: readonly string[];
}

export type ConditionType = 'Available' | 'Progressing' | 'UpdateInProgress';

interface Verdict {
  type: ConditionType;
  reason: string;
  message: string;
}

/** Which of the three conditions is True now, and why. */
export function conditionVerdict(input: ConditionInputs): Verdict {
  const progressing = input.groups.filter((g) => g.deleting || !g.available).map((g) => g.ordinal);
  const blocked = input.blocked ?? [];
  if (progressing.length === 0 && blocked.length === 0) {
    return { type: 'Available', reason: 'AllGroupsReady', message: 'All ServingGroups are ready' };
  }
  const list = (xs: number[]) => `[${[...new Set(xs)].sort((a, b) => a - b).join(' ')}]`;
  const notes = [...blocked, ...input.problems];
  const extra = notes.length ? `; ${notes.join('; ')}` : '';
  // An update is in progress while a group outside the partition is still on an old revision.
  const outdated = input.groups.filter((g) => g.ordinal >= input.partition && g.revision !== input.updateRevision);
  if (outdated.length > 0) {
    const updated = input.groups.filter((g) => !g.deleting && g.revision === input.updateRevision).map((g) => g.ordinal);
    return {
      type: 'UpdateInProgress',
      reason: 'GroupsUpdating',
      message: `ServingGroups progressing: ${list(progressing)}; updated: ${list(updated)}${extra}`,
    };
  }
  return { type: 'Progressing', reason: 'GroupProgressing', message: `ServingGroups progressing: ${list(progressing)}${extra}` };
}

const ALL_TYPES: ConditionType[] = ['Available', 'Progressing', 'UpdateInProgress'];

/**
 * The new condition list: the verdict's type True; the other two False when they were present
 * (Kthena adds a condition only once it first becomes True). Conditions of other types are kept.
 * Past the progress deadline (`stuck`), `Progressing` is False with its reason and message, as a
 * Deployment's is, and is added if it was not there; an `UpdateInProgress` verdict stays True.
 */
export function nextConditions(
  previous: readonly Condition[] | undefined,
  verdict: Verdict,
  generation: number | undefined,
  now: string,
  stuck?: { reason: string; message: string },
): Condition[] {
  const prev = previous ?? [];
  const out: Condition[] = prev.filter((c) => !(ALL_TYPES as string[]).includes(c.type));
  for (const type of ALL_TYPES) {
    const old = prev.find((c) => c.type === type);
    const stalled = stuck !== undefined && type === 'Progressing';
    const isTrue = type === verdict.type && !stalled;
    if (!isTrue && !old && !stalled) continue;
    const status = isTrue ? 'True' : 'False';
    const next: Condition = {
      type,
      status,
      reason: stalled ? stuck.reason : isTrue ? verdict.reason : falseReason(type, verdict),
      message: stalled ? stuck.message : verdict.message,
      lastTransitionTime: old && old.status === status ? old.lastTransitionTime : now,
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
    };
    out.push(next);
  }
  return out;
}

function falseReason(type: ConditionType, verdict: Verdict): string {
  if (type === 'Available') return verdict.reason; // not available because groups progress or update
  return verdict.type === 'Available' ? 'AllGroupsReady' : verdict.reason;
}

export interface StatusInputs extends ConditionInputs {
  /** Ordinals below this are partition-protected slots (min(partition, replicas)). */
  protectedOrdinals?: number;
  /** The ModelServing's name, for ServingGroup names in messages. */
  msName?: string;
  /** `status.roles` (status-roles.ts). */
  roles?: RoleStatusSummary[];
  /** The progress deadline in seconds (status-deadline.ts); without it there is none. */
  progressDeadlineSeconds?: number;
  /**
   * `spec.replicas`: a group being deleted at or above it is a scale-down's leftover, which the
   * deadline ignores (see `deadlineGroups`). Without it every deleting group counts.
   */
  specReplicas?: number;
  generation: number | undefined;
  previous: ModelServingStatus | undefined;
  labelSelector: string;
  now: string;
}

/**
 * The groups the progress deadline looks at: all but those being deleted at an ordinal at or above
 * `spec.replicas`. A ReplicaSet ignores terminating pods, so a Deployment's scale-down completes at
 * once; here a removed group's pods may drain for long (grace period, PodOpsLifecycle), and counting
 * them would turn a plain scale-down into Degraded+Stalled after the deadline. A group deleted below
 * `spec.replicas` is replaced in place under the same name, so it still counts.
 */
export function deadlineGroups(groups: readonly StatusGroup[], specReplicas: number | undefined): StatusGroup[] {
  if (specReplicas === undefined) return [...groups];
  return groups.filter((g) => !(g.deleting && g.ordinal >= specReplicas));
}

export function computeStatus(input: StatusInputs): ModelServingStatus {
  const { groups, updateRevision } = input;
  const live = groups.filter((g) => !g.deleting);
  const currentRevision = currentRevisionOf(groups, updateRevision, input.previous?.currentRevision, input.protectedOrdinals ?? 0);
  const verdict = conditionVerdict(input);
  const status: ModelServingStatus = {
    ...(input.previous ?? {}),
    replicas: groups.length,
    availableReplicas: live.filter((g) => g.available).length,
    updatedReplicas: live.filter((g) => g.revision === updateRevision).length,
    currentReplicas: live.filter((g) => g.revision === currentRevision).length,
    currentRevision,
    updateRevision,
    labelSelector: input.labelSelector,
    ...(input.roles ? { roles: input.roles } : {}),
  };
  let stuck: { reason: string; message: string } | undefined;
  const seconds = input.progressDeadlineSeconds;
  if (seconds !== undefined) {
    const counted = deadlineGroups(groups, input.specReplicas);
    const last = lastProgressTime({
      previous: input.previous,
      generation: input.generation,
      complete: conditionVerdict({ ...input, groups: counted }).type === 'Available',
      next: status,
      nowIso: input.now,
    });
    if (last === undefined) delete status.lastProgressTime;
    else status.lastProgressTime = last;
    if (deadlineExceeded(last, seconds, Date.parse(input.now))) {
      const ordinals = [...new Set(counted.filter((g) => g.deleting || !g.available).map((g) => g.ordinal))].sort((a, b) => a - b);
      const names = ordinals.map((o) => (input.msName ? servingGroupName(input.msName, o) : String(o)));
      const notReady = (input.roles ?? []).flatMap((r) => r.notReady ?? []).slice(0, NOT_READY_LISTED);
      stuck = { reason: PROGRESS_DEADLINE_EXCEEDED, message: deadlineMessage(names, seconds, notReady) };
    }
  }
  status.conditions = nextConditions(input.previous?.conditions, verdict, input.generation, input.now, stuck);
  if (input.generation !== undefined) status.observedGeneration = input.generation;
  return status;
}
