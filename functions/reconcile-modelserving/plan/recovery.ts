/**
 * Recovery policies, decided from what is observed rather than from remembered events, so any
 * worker reaches the same decision and an interrupted recovery is finished by the next reconcile.
 *
 * A role instance is *broken* when
 *  - one of its pods failed (phase Failed, or a restarted container that is not ready) and has been
 *    unhealthy for `restartGracePeriodSeconds`;
 *  - some of its pods are terminating while others still run (one was deleted or evicted);
 *  - a pod is missing from an instance that was Running (it was deleted and is already gone).
 * A pod missing from an instance that never ran is just not created yet and is simply created.
 *
 * Then: `ServingGroupRecreate` deletes the whole group, `RoleRecreate` the whole instance, and
 * `None` deletes only the failed pods. In every policy a missing pod is created again afterwards
 * (Kthena's `None` never refilled it, kthena#1661).
 */
import type { RecoveryPolicy } from '../../../api/modelserving.js';
import type { ObservedRoleInstance, PodFacts } from './observed.js';
import type { RoleState } from './role-status.js';

export interface InstanceHealth {
  broken: boolean;
  /** Failed pods whose grace period is over. */
  failedPods: PodFacts[];
  /** When a failed pod's grace period ends (epoch ms), if one is still waiting. */
  recheckAt: number | undefined;
  reasons: string[];
}

export function instanceHealth(
  instance: ObservedRoleInstance,
  expectedPods: number,
  graceSeconds: number,
  now: number,
  previousState: RoleState | undefined,
): InstanceHealth {
  const live = instance.pods.filter((p) => !p.terminating);
  const terminating = instance.pods.filter((p) => p.terminating);
  const reasons: string[] = [];
  const failedPods: PodFacts[] = [];
  let recheckAt: number | undefined;
  const graceMs = Math.max(0, graceSeconds) * 1000;
  for (const p of live.filter((x) => x.failed)) {
    const due = (p.unhealthySince ?? now) + graceMs;
    if (due <= now) {
      failedPods.push(p);
      reasons.push(`pod ${p.name} failed`);
    } else recheckAt = Math.min(recheckAt ?? due, due);
  }
  if (live.length > 0 && terminating.length > 0) {
    reasons.push(`pod ${terminating.map((p) => p.name).join(', ')} of a running instance is terminating`);
  }
  const present = new Set(instance.pods.map((p) => p.podIndex));
  const missing = Array.from({ length: expectedPods }, (_, i) => i).filter((i) => !present.has(i));
  if (live.length > 0 && missing.length > 0 && previousState === 'Running') {
    reasons.push(`${missing.length} pod(s) of a running instance disappeared`);
  }
  return { broken: reasons.length > 0, failedPods, recheckAt, reasons };
}

/**
 * A pod's error judgement with the per-pod restart memory: a pod that is not running and ready counts
 * as failed because of restarts only when it restarted since it was last seen Running and Ready
 * (`acknowledged`, by UID). Without it, a pod that restarted once long ago would be an error pod on
 * every readiness blip for the rest of its life.
 */
export function judgeFailed(pod: PodFacts, acknowledged: Readonly<Record<string, number>> | undefined): PodFacts {
  if (!pod.failed || pod.exited) return pod;
  const seen = acknowledged?.[pod.uid];
  return seen !== undefined && pod.restarts <= seen ? { ...pod, failed: false } : pod;
}

/** The restart memory to keep for an instance's pods (see `judgeFailed`); undefined when empty. */
export function restartMemory(pods: readonly PodFacts[], previous: Readonly<Record<string, number>> | undefined): Record<string, number> | undefined {
  const out: Record<string, number> = {};
  for (const p of pods) {
    if (p.restarts === 0 || !p.uid) continue;
    const seen = p.runningAndReady && !p.terminating ? p.restarts : previous?.[p.uid];
    if (seen !== undefined) out[p.uid] = seen;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * How long an eviction-protected instance that lost pods without any failing is left alone before
 * `RoleRecreate`/`ServingGroupRecreate` deletes the rest of it (kubectl drain retries a refused eviction
 * every 5 s). A drain evicts a pod by name and retries that name until it is evicted or gone: when the
 * function deletes an evicted pod's siblings and recreates them under the same names on another node
 * before the drain's next retry, the retry hits the replacement, whose group is back and closed by its
 * PodDisruptionBudget, and the drain never ends. Left alone, the siblings are evicted by the drain too (a
 * group that is down is open), and only then replaced.
 */
export const EVICTION_SETTLE_MS = 10_000;

/** Whether a broken instance was only disrupted (pods gone or terminating, none failed): what a drain does. */
export function disruptedOnly(health: InstanceHealth): boolean {
  return health.broken && health.failedPods.length === 0;
}

export type RecoveryAction =
  | { kind: 'none' }
  | { kind: 'deletePods'; pods: PodFacts[] }
  | { kind: 'recreateInstance' }
  | { kind: 'recreateGroup' };

export function recoveryFor(policy: RecoveryPolicy, health: InstanceHealth): RecoveryAction {
  if (!health.broken) return { kind: 'none' };
  switch (policy) {
    case 'ServingGroupRecreate':
      return { kind: 'recreateGroup' };
    case 'RoleRecreate':
      return { kind: 'recreateInstance' };
    case 'None':
      return health.failedPods.length ? { kind: 'deletePods', pods: health.failedPods } : { kind: 'none' };
  }
}

/**
 * ServingGroupRecreate also rebuilds a group that lost a whole role instance: one that is entirely
 * terminating, or that was known and is gone, while the role has fewer live instances than it
 * should (so it is not a scale-down).
 */
export function groupLostInstance(
  instances: readonly ObservedRoleInstance[],
  wantedReplicas: number,
  knownGone: number,
): boolean {
  const live = instances.filter((i) => i.pods.some((p) => !p.terminating)).length;
  const dying = instances.length - live;
  return (dying > 0 || knownGone > 0) && live < wantedReplicas;
}
