import { conditionStatus, isPodReady, type PodState } from './pod-state.js';
import { requiresOffline } from './stage.js';
import { liveLifecycles, parseLifecycleView } from './view.js';

/**
 * Pod annotation (usually set on the owner's Pod template): how many of the owner's controlled Pods may be out of
 * service at once through the lifecycle, as a count ("1") or a percentage of them ("25%"). kuperator's
 * PodTransitionRule availablePolicy, reduced to its most used rule. Absent: no budget, pre-check passes.
 */
export const MAX_UNAVAILABLE_ANNOTATION = 'ops-lifecycle.ripple.dev/max-unavailable';

export type Budget = { kind: 'count'; value: number } | { kind: 'percent'; value: number };

export function parseBudget(raw: string | undefined): { ok: true; budget?: Budget } | { ok: false; error: string } {
  if (raw === undefined) return { ok: true };
  const m = /^(\d+)(%?)$/.exec(raw.trim());
  if (!m) return { ok: false, error: `${MAX_UNAVAILABLE_ANNOTATION}="${raw}" is neither a count ("1") nor a percentage ("25%")` };
  const value = Number(m[1]);
  if (m[2] === '%' && value > 100) return { ok: false, error: `${MAX_UNAVAILABLE_ANNOTATION}="${raw}" is over 100%` };
  return { ok: true, budget: m[2] === '%' ? { kind: 'percent', value } : { kind: 'count', value } };
}

/** Out of service: not Ready, or holding a lifecycle between pre-checked and post-checked. */
export function isUnavailable(pod: Pick<PodState, 'labels' | 'conditions' | 'deleting'>): boolean {
  if (pod.deleting || !isPodReady(pod)) return true;
  return liveLifecycles(parseLifecycleView(pod.labels)).some((e) => requiresOffline(e.stage));
}

/** The budget as a count of Pods: a percentage rounds down, but never below 1 (so something can always move). */
export function allowedUnavailable(budget: Budget, total: number): number {
  if (budget.kind === 'count') return budget.value;
  return Math.max(1, Math.floor((total * budget.value) / 100));
}

export interface AvailabilityInput {
  pod: Pick<PodState, 'labels' | 'conditions' | 'deleting'>;
  /** The other controlled Pods of the same owner (not this one). */
  siblings: ReadonlyArray<Pick<PodState, 'labels' | 'conditions' | 'deleting'>>;
  budget: Budget;
}

/**
 * The pre-check: may this Pod be taken out of service now? Only if, counting it, no more than the budget of the
 * owner's Pods would be out. A Pod already out of service (not Ready) takes nothing more from the budget.
 * Two Pods judged at the same moment can both pass (the check reads, it does not reserve); the next pre-check
 * sees both.
 */
export function availabilityAllows(input: AvailabilityInput): { allowed: boolean; reason: string } {
  const out = input.siblings.filter(isUnavailable).length;
  const mine = isUnavailable(input.pod) ? 0 : 1;
  const max = allowedUnavailable(input.budget, input.siblings.length + 1);
  const allowed = out + mine <= max;
  return { allowed, reason: `${out} of the owner's other ${input.siblings.length} Pods out of service, at most ${max} may be` };
}

/** The post-check: the operation left the Pod's containers ready (a restarted or updated container came up). */
export function postCheckPasses(pod: Pick<PodState, 'conditions'>): boolean {
  return conditionStatus(pod, 'ContainersReady') !== 'False';
}

/** A pod whose lifecycle waits for its pre-check (begun, or in pre-check): the budget decides when it goes on. */
export function awaitsPreCheck(labels: Readonly<Record<string, string>>): boolean {
  return liveLifecycles(parseLifecycleView(labels)).some((e) => e.stage === 'begun' || e.stage === 'pre-check');
}
