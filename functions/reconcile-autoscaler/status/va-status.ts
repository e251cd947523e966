/**
 * The status a per-VA reconcile writes, in two parts:
 * - WVA's own: TargetResolved always; with a decision, the whole desiredOptimizedAlloc plus
 *   MetricsAvailable and OptimizationReady (persisted, unlike WVA v0.5.0); with the target gone, the
 *   cleared conditions and zero current replicas;
 * - the unified model (status/, seed 002): what the state engine needs to compute phase, Ready,
 *   ConfigValid, DependenciesReachable and the children `ScaleTargetReady` and `ScalingReady`.
 */
import { ConditionType, MetricsAvailableReason, OptimizationReadyReason, type VariantAutoscalingStatus } from '../../../api/variantautoscaling.js';
import type { ConditionInput } from '../../../status/conditions.js';
import type { ChildHealth, ClassifiedError, StateEngineInput } from '../../../status/engine.js';
import type { VariantDecision } from '../saturation/decision.js';
import type { TargetResolution } from '../target/resolve.js';

/** What a decision must carry for status; `source` tells a Prometheus failure from missing metrics. */
export type StatusDecision = Pick<VariantDecision, 'desiredReplicas' | 'accelerator' | 'currentReplicas' | 'decidedAt' | 'metricsAvailable' | 'optimizationReady'> &
  Partial<Pick<VariantDecision, 'source'>>;

export interface UpstreamInputs {
  previous: VariantAutoscalingStatus | undefined;
  target: TargetResolution;
  /** The latest cycle's decision for this VA, when one exists. */
  decision?: StatusDecision;
  /** Whether the decision was published as metrics for HPA/KEDA. */
  actuationApplied?: boolean;
  /** The last cycle left this VA out (its Deployment at 0 replicas, another VA owns it…), and why. */
  inactive?: InactiveInput;
}

export interface InactiveInput {
  /** `InactiveReason` of saturation/active-variants.ts. */
  reason: string;
  message: string;
  currentReplicas: number;
}

/** WVA's part of the status: the fields to write whole, and its three conditions. */
export interface UpstreamStatus {
  fields: Pick<VariantAutoscalingStatus, 'desiredOptimizedAlloc' | 'currentAllocation' | 'actuation'>;
  conditions: ConditionInput[];
}

export function upstreamStatus(i: UpstreamInputs): UpstreamStatus {
  const conditions: ConditionInput[] = [i.target.condition];
  const fields: UpstreamStatus['fields'] = {};
  if (!i.target.found && i.target.cleared) {
    conditions.push(i.target.cleared.metricsAvailable, i.target.cleared.optimizationReady);
    fields.currentAllocation = { numReplicas: 0 };
    // The series were removed with the target: nothing is published for HPA/KEDA any more.
    if (i.previous?.actuation !== undefined) fields.actuation = { applied: false };
  } else if (i.target.found && i.decision) {
    const d = i.decision;
    // Whole, every time: a merge that dropped numReplicas 0 is WVA bug #731. lastRunTime is when the
    // value was decided: an unchanged decision keeps it, so a steady cycle writes nothing (the time of
    // the last cycle is the wva_last_optimization_timestamp_seconds metric).
    const prev = i.previous?.desiredOptimizedAlloc;
    const unchanged = prev !== undefined && prev.numReplicas === d.desiredReplicas && prev.accelerator === d.accelerator && prev.lastRunTime !== undefined;
    fields.desiredOptimizedAlloc = { accelerator: d.accelerator, numReplicas: d.desiredReplicas, lastRunTime: unchanged ? prev.lastRunTime : d.decidedAt };
    fields.currentAllocation = { numReplicas: d.currentReplicas, accelerator: d.accelerator };
    fields.actuation = { applied: i.actuationApplied ?? i.previous?.actuation?.applied ?? false };
    conditions.push(d.metricsAvailable, d.optimizationReady);
  } else if (i.target.found && i.inactive) {
    // Issue 14 scenario 3: say why instead of the last decision's "MetricsFound, from 3 pods".
    const why = inactiveText(i.inactive);
    conditions.push(
      { type: ConditionType.MetricsAvailable, status: 'False', reason: MetricsAvailableReason.MetricsMissing, message: `No metrics collected: ${why}` },
      { type: ConditionType.OptimizationReady, status: 'False', reason: OptimizationReadyReason.SkippedProcessing, message: why },
    );
    fields.currentAllocation = { numReplicas: i.inactive.currentReplicas, ...(i.previous?.currentAllocation?.accelerator !== undefined ? { accelerator: i.previous.currentAllocation.accelerator } : {}) };
    if (i.previous?.actuation !== undefined) fields.actuation = { applied: false };
  }
  return { fields, conditions };
}

function inactiveText(i: InactiveInput): string {
  return i.reason === 'target-scaled-to-zero'
    ? `${i.message}: left out of optimization, desired 0 published so that it stays there`
    : `${i.message}: left out of optimization, no desired replicas published`;
}

/** The Deployment named by scaleTargetRef: `ScaleTargetReady`. */
export const SCALE_TARGET_CHILD = 'ScaleTarget';
/** Decisions from metrics reaching this VA: `ScalingReady`. (`Optimization` would collide with WVA's OptimizationReady.) */
export const SCALING_CHILD = 'Scaling';

export interface UnifiedInputs {
  /** Spec problems the API server accepts but that can never work, each starting with the field path. */
  specErrors: readonly string[];
  target: TargetResolution;
  decision?: StatusDecision;
  inactive?: InactiveInput;
}

/**
 * The state engine's inputs for a VA. Ready=True means the variant is operational: its Deployment
 * exists and a cycle decided its replicas from metrics.
 * - A missing Deployment is not a spec error (seed 003 example 2: a VA may come first): the VA is
 *   Pending with `Ready=False/DeploymentNotFound`, ConfigValid stays True, no retry loop (the
 *   Deployment watch brings it back).
 * - A spec the API server accepts but that cannot work (`scaleTargetRef` not a Deployment) is a Spec
 *   error: ConfigValid=False naming the field, phase Failed, terminal.
 * - A failed Prometheus query is a connectivity error: DependenciesReachable=False at once, Degraded
 *   only after the shared grace period.
 */
export function unifiedStatusInputs(i: UnifiedInputs): { children: ChildHealth[]; errors: ClassifiedError[] } {
  const errors: ClassifiedError[] = i.specErrors.map((message) => ({ class: 'Spec', message, child: SCALE_TARGET_CHILD }));
  const children: ChildHealth[] = [];
  if (errors.length === 0) {
    children.push(
      i.target.found
        ? { name: SCALE_TARGET_CHILD, state: 'Ready', message: i.target.condition.message ?? '' }
        : { name: SCALE_TARGET_CHILD, state: 'Pending', reason: 'DeploymentNotFound', message: i.target.condition.message ?? '' },
    );
  }
  const d = i.decision;
  if (!i.target.found) {
    children.push({ name: SCALING_CHILD, state: 'Pending', reason: 'MetricsUnavailable', message: 'No scaling decisions without the scale target' });
  } else if (d === undefined && i.inactive !== undefined) {
    // A Deployment at 0 replicas is idle, not broken; a second VA on one Deployment needs fixing.
    const idle = i.inactive.reason === 'target-scaled-to-zero';
    children.push({ name: SCALING_CHILD, state: idle ? 'Ready' : 'Pending', ...(idle ? {} : { reason: reasonOfInactive(i.inactive.reason) }), message: inactiveText(i.inactive) });
  } else if (d === undefined) {
    children.push({ name: SCALING_CHILD, state: 'Starting', reason: 'AwaitingOptimization', message: 'Waiting for the first optimization cycle' });
  } else if (d.source === 'prometheus-auth') {
    // Seed 002 §3.2: refused credentials are an auth problem (AuthValid=False, Ready=False/AuthFailed), not connectivity.
    errors.push({ class: 'Auth', reason: 'AuthFailed', message: d.metricsAvailable.message, child: SCALING_CHILD });
  } else if (d.source === 'prometheus-error') {
    errors.push({ class: 'Connectivity', reason: 'PrometheusError', message: d.metricsAvailable.message, child: SCALING_CHILD });
  } else if (d.metricsAvailable.status !== 'True') {
    children.push({ name: SCALING_CHILD, state: 'Starting', reason: d.metricsAvailable.reason, message: d.metricsAvailable.message });
  } else {
    children.push({ name: SCALING_CHILD, state: 'Ready', message: d.optimizationReady.message });
  }
  return { children, errors };
}

/** `duplicate-target` → `DuplicateTarget`. */
function reasonOfInactive(reason: string): string {
  return reason.replace(/(^|-)([a-z])/g, (_, __: string, c: string) => c.toUpperCase());
}

/**
 * What one VA reconcile hands to `writeStatus`: WVA's fields (each written whole by the helper) and
 * the engine's inputs with WVA's conditions among them.
 */
export function variantStatusWrite(i: UpstreamInputs & { specErrors: readonly string[] }): {
  input: Omit<StateEngineInput, 'previous' | 'generation' | 'now'>;
  fields: UpstreamStatus['fields'];
} {
  const upstream = upstreamStatus(i);
  const { children, errors } = unifiedStatusInputs({
    specErrors: i.specErrors,
    target: i.target,
    ...(i.decision !== undefined ? { decision: i.decision } : {}),
    ...(i.inactive !== undefined ? { inactive: i.inactive } : {}),
  });
  return { input: { children, errors, upstreamConditions: upstream.conditions }, fields: upstream.fields };
}
