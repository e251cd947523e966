import {
  CONDITION_MESSAGE_MAX_LENGTH,
  CONDITION_REASON_MAX_LENGTH,
  CONDITION_REASON_PATTERN,
  CONDITION_TYPE_MAX_LENGTH,
  CONDITION_TYPE_PATTERN,
  type Condition,
  type ConditionStatus,
} from './schema.js';

/** What a caller says about a condition; the helper fills in the transition time. */
export interface ConditionInput {
  type: string;
  status: ConditionStatus;
  reason: string;
  message?: string;
  observedGeneration?: number;
}

export class InvalidConditionError extends Error {
  override readonly name = 'InvalidConditionError';
}

const CAMEL_CASE = /^[A-Z][A-Za-z0-9]*$/;

/** Ripple's own reasons: one CamelCase word, no separators (stricter than metav1's pattern). */
export function isCamelCaseReason(reason: string): boolean {
  return reason.length <= CONDITION_REASON_MAX_LENGTH && CAMEL_CASE.test(reason);
}

export function isValidConditionType(type: string): boolean {
  return type.length <= CONDITION_TYPE_MAX_LENGTH && CONDITION_TYPE_PATTERN.test(type);
}

/**
 * Children and classified errors hand us reasons from elsewhere (a pod's `waiting.reason`, a
 * Prometheus error); a status write must not fail because one of them is not CamelCase, so they are
 * folded into one: "image pull-error" → "ImagePullError". Already-CamelCase reasons pass unchanged.
 */
export function toCamelCaseReason(raw: string | undefined, fallback: string): string {
  if (raw !== undefined && isCamelCaseReason(raw)) return raw;
  const words = (raw ?? '').split(/[^A-Za-z0-9]+/).filter((w) => w.length > 0);
  let joined = words.map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join('');
  joined = joined.replace(/^[0-9]+/, '').slice(0, CONDITION_REASON_MAX_LENGTH);
  return joined.length > 0 ? joined : fallback;
}

export function truncateMessage(message: string): string {
  if (message.length <= CONDITION_MESSAGE_MAX_LENGTH) return message;
  const marker = '…';
  return message.slice(0, CONDITION_MESSAGE_MAX_LENGTH - marker.length) + marker;
}

/** metav1.Time's wire form: RFC 3339 in UTC with whole seconds. */
export function formatConditionTime(time: Date): string {
  return time.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Milliseconds since the epoch, or undefined for a missing or unreadable timestamp. */
export function parseConditionTime(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

export function findCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/**
 * Upserts one condition the way apimachinery's `meta.SetStatusCondition` does: `lastTransitionTime`
 * moves only when `status` changes; reason, message and observedGeneration are updated in place.
 * (aim-engine also moves it on a reason change; we do not: a reason is not a transition.)
 * Returns a new list; the order of existing conditions is kept and a new type is appended, so a
 * re-computation that changes nothing yields an identical list and no patch.
 */
export function setCondition(conditions: readonly Condition[], input: ConditionInput, now: Date): Condition[] {
  if (!isValidConditionType(input.type)) {
    throw new InvalidConditionError(`condition type ${JSON.stringify(input.type)} is not a valid metav1 condition type`);
  }
  if (!CONDITION_REASON_PATTERN.test(input.reason) || input.reason.length > CONDITION_REASON_MAX_LENGTH) {
    throw new InvalidConditionError(
      `condition ${input.type}: reason ${JSON.stringify(input.reason)} must be CamelCase (metav1 reason pattern)`,
    );
  }
  const index = conditions.findIndex((c) => c.type === input.type);
  const existing = index >= 0 ? conditions[index] : undefined;
  const next: Condition = {
    type: input.type,
    status: input.status,
    lastTransitionTime:
      existing !== undefined && existing.status === input.status ? existing.lastTransitionTime : formatConditionTime(now),
    reason: input.reason,
    message: truncateMessage(input.message ?? ''),
  };
  const generation = input.observedGeneration ?? existing?.observedGeneration;
  if (generation !== undefined) next.observedGeneration = generation;

  const out = [...conditions];
  if (index >= 0) out[index] = next;
  else out.push(next);
  return out;
}
