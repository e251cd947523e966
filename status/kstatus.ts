/**
 * How the tools our users point at Ripple's resources read them, reproduced from their documented
 * rules so tests can prove the engine's output reads right: kstatus (cli-utils; Flux health checks
 * and `kubectl` apply-time waits) and `kubectl wait --for=condition=…`. Only the generic rules for
 * custom resources are modelled: not kstatus's rules for built-in kinds, nor NotFound/Unknown
 * (which need the API server's answer, not the object).
 */

export type KstatusStatus = 'InProgress' | 'Failed' | 'Current' | 'Terminating';

export interface KstatusResult {
  status: KstatusStatus;
  reason?: string;
  message: string;
}

interface ConditionLike {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
}

/** The fields of an object these readers look at. */
export interface ReadableObject {
  metadata: { generation?: number; deletionTimestamp?: string };
  status?: { observedGeneration?: number; conditions?: readonly ConditionLike[] };
}

function conditionIs(conditions: readonly ConditionLike[], type: string, status: string): ConditionLike | undefined {
  return conditions.find((c) => c.type === type && c.status === status);
}

/** kstatus `Compute` for a custom resource. */
export function computeKstatus(obj: ReadableObject): KstatusResult {
  if (obj.metadata.deletionTimestamp !== undefined) {
    return { status: 'Terminating', message: 'Resource scheduled for deletion' };
  }
  const observed = obj.status?.observedGeneration;
  const generation = obj.metadata.generation;
  if (observed !== undefined && generation !== undefined && observed !== generation) {
    return {
      status: 'InProgress',
      reason: 'LatestGenerationNotObserved',
      message: `Generation ${generation} is not yet observed (status.observedGeneration is ${observed})`,
    };
  }
  const conditions = obj.status?.conditions ?? [];
  const reconciling = conditionIs(conditions, 'Reconciling', 'True');
  if (reconciling !== undefined) {
    return { status: 'InProgress', reason: reconciling.reason, message: reconciling.message ?? '' };
  }
  const stalled = conditionIs(conditions, 'Stalled', 'True');
  if (stalled !== undefined) {
    return { status: 'Failed', reason: stalled.reason, message: stalled.message ?? '' };
  }
  const ready = conditions.find((c) => c.type === 'Ready');
  if (ready !== undefined) {
    if (ready.status === 'True') return { status: 'Current', message: 'Resource is Ready' };
    return { status: 'InProgress', reason: ready.reason, message: ready.message ?? '' };
  }
  return { status: 'Current', message: 'Resource is current' };
}

/**
 * `kubectl wait --for=condition=<type>[=<value>]`: the type matches case-insensitively, the value
 * defaults to True, and a condition (or else status) observedGeneration older than the object's
 * generation does not count yet.
 */
export function kubectlWaitConditionMet(obj: ReadableObject, conditionType: string, value = 'True'): boolean {
  const wanted = conditionType.toLowerCase();
  const condition = (obj.status?.conditions ?? []).find((c) => c.type.toLowerCase() === wanted);
  if (condition === undefined) return false;
  const generation = obj.metadata.generation;
  const observed = condition.observedGeneration ?? obj.status?.observedGeneration;
  if (generation !== undefined && observed !== undefined && observed < generation) return false;
  return condition.status.toLowerCase() === value.toLowerCase();
}
