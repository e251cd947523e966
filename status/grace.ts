import { findCondition, parseConditionTime } from './conditions.js';
import { canDegradeFrom } from './phase.js';
import type { Condition, Phase } from './schema.js';
import { ConditionType } from './vocabulary.js';

/** Seed 002: a dependency must stay unreachable this long before a Starting/Ready resource turns Degraded. */
export const DEFAULT_GRACE_PERIOD_MS = 10_000;

/**
 * - `informational`: the resource was never Starting/Ready (Pending, new, Failed…), so unreachable
 *   dependencies do not degrade it; it stays Pending.
 * - `within`: Starting/Ready and the trouble is younger than the grace period: nothing visible
 *   flips yet, and the caller must re-check when the period ends.
 * - `expired`: the trouble outlived the grace period: Degraded.
 */
export type GraceState = 'informational' | 'within' | 'expired';

export interface GraceEvaluation {
  state: GraceState;
  /** When the trouble was first seen (ms since epoch). */
  sinceMs: number;
  /** Time left in the grace period; positive only when `state` is `within`. */
  remainingMs: number;
}

/**
 * When connectivity trouble was first seen, from persisted state: the `lastTransitionTime` of a
 * `DependenciesReachable=False` condition. It stays anchored at the first failure because the
 * condition's status does not change while the trouble lasts. Undefined when it is not False.
 * metav1.Time has whole seconds, so the anchor may be up to 1 s early: the grace period can end up
 * to 1 s sooner than 10 s after the first failure, never later.
 */
export function connectivityTroubleSince(conditions: readonly Condition[] | undefined): number | undefined {
  const condition = findCondition(conditions, ConditionType.DependenciesReachable);
  if (condition?.status !== 'False') return undefined;
  return parseConditionTime(condition.lastTransitionTime);
}

export function evaluateGrace(input: {
  previousPhase: Phase | undefined;
  sinceMs: number | undefined;
  nowMs: number;
  gracePeriodMs: number;
}): GraceEvaluation {
  const sinceMs = Math.min(input.sinceMs ?? input.nowMs, input.nowMs);
  if (!canDegradeFrom(input.previousPhase)) return { state: 'informational', sinceMs, remainingMs: 0 };
  const remainingMs = sinceMs + input.gracePeriodMs - input.nowMs;
  if (remainingMs > 0) return { state: 'within', sinceMs, remainingMs };
  return { state: 'expired', sinceMs, remainingMs: 0 };
}
