import type { Condition, ConditionStatus, EngineStatus } from './schema.js';

/** A condition whose `status` changed (or that appeared). Reason/message-only changes are not transitions. */
export interface ConditionTransition {
  type: string;
  /** `undefined` when the condition did not exist before. */
  from: ConditionStatus | undefined;
  to: ConditionStatus;
  reason: string;
  message: string;
  /**
   * The Event emit-events should write, if any: Warning when the condition turns abnormal (or
   * first appears abnormal and that counts as a failure), Normal when it recovers from abnormal.
   * Undefined for a condition first appearing in its normal state, for mere progress, and for
   * conditions whose polarity we do not know (upstream types such as Kthena's
   * `Progressing`, which flips on every rollout and is no failure).
   */
  eventType?: 'Normal' | 'Warning';
}

/** Which status is normal for a condition type; undefined when unknown (then no Event). */
export type PolarityOf = (type: string) => 'positive' | 'negative' | undefined;

/**
 * Whether a condition that first appears in its abnormal state is a failure (Warning) or just
 * progress (no Event): a new resource's `Ready=False/Starting` is no failure, `ConfigValid=False` is.
 * Transitions from a normal state are always judged failures. Default: every appearance is.
 */
export type FailingOnAppearance = (condition: Condition) => boolean;

function isAbnormal(status: ConditionStatus | undefined, polarity: 'positive' | 'negative'): boolean | undefined {
  if (status === undefined) return undefined;
  // Unknown counts as abnormal for positive conditions (not known to be healthy) and as normal for
  // negative ones (not known to be broken), matching how kstatus and `kubectl wait` read them.
  return polarity === 'positive' ? status !== 'True' : status === 'True';
}

/** Status changes between two condition lists, in the order of `after`. */
export function conditionTransitions(
  before: readonly Condition[] | undefined,
  after: readonly Condition[],
  polarityOf: PolarityOf = () => undefined,
  failingOnAppearance: FailingOnAppearance = () => true,
): ConditionTransition[] {
  const previous = new Map((before ?? []).map((c) => [c.type, c]));
  const out: ConditionTransition[] = [];
  for (const condition of after) {
    const from = previous.get(condition.type)?.status;
    if (from === condition.status) continue;
    const transition: ConditionTransition = {
      type: condition.type,
      from,
      to: condition.status,
      reason: condition.reason,
      message: condition.message,
    };
    const polarity = polarityOf(condition.type);
    if (polarity !== undefined) {
      const wasAbnormal = isAbnormal(from, polarity);
      const nowAbnormal = isAbnormal(condition.status, polarity) === true;
      const failing = wasAbnormal === false || (wasAbnormal === undefined && failingOnAppearance(condition));
      if (nowAbnormal && failing) transition.eventType = 'Warning';
      else if (!nowAbnormal && wasAbnormal === true) transition.eventType = 'Normal';
    }
    out.push(transition);
  }
  return out;
}

function sameCondition(a: Condition, b: Condition): boolean {
  return (
    a.status === b.status &&
    a.reason === b.reason &&
    a.message === b.message &&
    a.lastTransitionTime === b.lastTransitionTime &&
    a.observedGeneration === b.observedGeneration
  );
}

/**
 * Whether writing `next` would change anything the engine owns, so callers patch status only on a
 * change (a no-op write bumps resourceVersion and wakes every watcher). Conditions compare as a map
 * keyed by type, so a reordering alone is not a change.
 */
export function statusChanged(previous: EngineStatus | undefined, next: EngineStatus): boolean {
  if (previous?.phase !== next.phase) return true;
  if (previous?.observedGeneration !== next.observedGeneration) return true;
  const before = previous?.conditions ?? [];
  const after = next.conditions ?? [];
  if (before.length !== after.length) return true;
  const byType = new Map(before.map((c) => [c.type, c]));
  return after.some((c) => {
    const old = byType.get(c.type);
    return old === undefined || !sameCondition(old, c);
  });
}
