/**
 * The progress deadline, with Kubernetes' Deployment semantics (`progressDeadlineSeconds`): while the
 * spec's rollout or scale has not completed, each step forward resets a clock; when the clock runs
 * past the deadline, Kthena's `Progressing` condition turns False with reason
 * `ProgressDeadlineExceeded`, naming the ServingGroups that are stuck. Progress is what the
 * Deployment controller counts (more updated or available, fewer old), plus, since a ServingGroup is
 * made of role instances, more instances ready or updated. A completed generation is not checked
 * again: capacity lost later is Degraded (unified-status.ts), not a stuck rollout.
 *
 * Where the clock lives: `status.lastProgressTime` (metav1.Condition has no lastUpdateTime, which a
 * Deployment's condition uses for this), set while a generation is in progress and removed once it
 * completes.
 */
import { PROGRESS_DEADLINE_ANNOTATION, type ModelServingStatus } from '../../../api/modelserving.js';

export { DEFAULT_PROGRESS_DEADLINE_SECONDS, PROGRESS_DEADLINE_ANNOTATION, progressDeadlineOf } from '../../../api/modelserving.js';

export const PROGRESS_DEADLINE_EXCEEDED = 'ProgressDeadlineExceeded';

interface Counters {
  updated: number;
  old: number;
  available: number;
  rolesReady: number;
  rolesUpdated: number;
}

function countersOf(s: ModelServingStatus | undefined): Counters {
  const replicas = s?.replicas ?? 0;
  const updated = s?.updatedReplicas ?? 0;
  const roles = s?.roles ?? [];
  return {
    updated,
    old: replicas - updated,
    available: s?.availableReplicas ?? 0,
    rolesReady: roles.reduce((n, r) => n + r.readyReplicas, 0),
    rolesUpdated: roles.reduce((n, r) => n + r.updatedReplicas, 0),
  };
}

/** Whether `next` is a step forward from `previous` (Deployment's DeploymentProgressing, plus role instances). */
export function madeProgress(previous: ModelServingStatus | undefined, next: ModelServingStatus): boolean {
  const a = countersOf(previous);
  const b = countersOf(next);
  return b.updated > a.updated || b.old < a.old || b.available > a.available || b.rolesReady > a.rolesReady || b.rolesUpdated > a.rolesUpdated;
}

export interface ClockInput {
  /** The status as read (before this reconcile). */
  previous: ModelServingStatus | undefined;
  /** `metadata.generation` now. */
  generation: number | undefined;
  /** The spec's work is done (Available). */
  complete: boolean;
  /** The status this reconcile computed (counts and roles). */
  next: ModelServingStatus;
  nowIso: string;
}

/** The next `lastProgressTime`: undefined when no rollout or scale is in progress. */
export function lastProgressTime(input: ClockInput): string | undefined {
  if (input.complete) return undefined;
  // A new spec (a rollout, a scale, an HPA's too) starts the clock.
  if (input.previous?.observedGeneration !== input.generation) return input.nowIso;
  const last = input.previous?.lastProgressTime;
  // This generation completed before: what it loses later is not a rollout that got stuck.
  if (last === undefined) return undefined;
  return madeProgress(input.previous, input.next) ? input.nowIso : last;
}

/** When the deadline passes (epoch ms), or undefined without a clock. */
export function deadlineAt(last: string | undefined, seconds: number): number | undefined {
  if (last === undefined) return undefined;
  const t = Date.parse(last);
  return Number.isNaN(t) ? undefined : t + seconds * 1000;
}

export function deadlineExceeded(last: string | undefined, seconds: number, nowMs: number): boolean {
  const at = deadlineAt(last, seconds);
  return at !== undefined && at <= nowMs;
}

/** `ServingGroups a, b have made no progress for 600s (…); not ready: a/prefill-0, …`. */
export function deadlineMessage(stuckGroups: readonly string[], seconds: number, notReady: readonly string[]): string {
  const groups = stuckGroups.length > 0 ? `ServingGroups ${stuckGroups.join(', ')}` : 'The rollout';
  const which = notReady.length > 0 ? `; not ready: ${notReady.join(', ')}` : '';
  return `${groups} have made no progress for ${seconds}s (progress deadline, annotation ${PROGRESS_DEADLINE_ANNOTATION})${which}`;
}
