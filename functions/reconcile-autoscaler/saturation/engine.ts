/**
 * One optimization cycle over all model groups, as plain data in and out: the handler collects
 * metrics for each group, calls `decideCycle`, hands each VA its decision and exports the gauges.
 *
 * Per model: analyse saturation → ±1 replica targets (or hold while in transition) → scale-to-zero
 * or minimum-replica policy; then, across models, the optional GPU limiter caps scale-ups.
 */
import { ConditionType, MetricsAvailableReason, OptimizationReadyReason } from '../../../api/variantautoscaling.js';
import type { SaturationConfigSet, SaturationThresholds } from '../config/saturation-config.js';
import { saturationThresholdsFor } from '../config/saturation-config.js';
import type { ScaleToZeroPolicy } from '../config/scale-to-zero-config.js';
import { formatConditionTime } from '../../../status/conditions.js';
import { formatPrometheusDuration } from '../config/duration.js';
import type { ActiveVariant, ModelGroup } from './active-variants.js';
import { analyzeModelSaturation } from './analyzer.js';
import type { VariantDecision } from './decision.js';

/** A condition as a decision carries it (message always set). */
type DecisionCondition = VariantDecision['metricsAvailable'];
import { enforcePolicy, type RequestCount } from './enforcer.js';
import { limitByGpus } from './limiter.js';
import { calculateSaturationTargets, type TargetStep } from './targets.js';
import { V2_ANALYZER_NAME } from '../config/saturation-config.js';
import { analyzeV2, hasCacheConfig, type V2Result } from './v2.js';
import { actionFor, type ModelAnalysis, type ReplicaMetrics } from './types.js';

/** `auth`: Prometheus refused the credentials (401/403), an auth problem rather than a connectivity one. */
/**
 * `stale`: pods of the group's variants whose newest sample is older than the fresh threshold but
 * younger than the unavailable one (they are not in `replicas`).
 */
export type GroupMetrics =
  | { status: 'ok'; replicas: readonly ReplicaMetrics[]; stale?: ReadonlyArray<{ podName: string; variantName: string }> }
  | { status: 'error'; message: string; auth?: boolean };

export interface GroupInputs {
  metrics: GroupMetrics;
  /** Needed only when scale-to-zero is enabled for the model. */
  requestCount?: RequestCount;
  /** Requests waiting in the inference gateway (when it is scraped): no scale to zero while there are some. */
  pendingRequests?: number;
  /** How the model's queries went, for the operator metrics (not read by the engine). */
  collection?: { seconds: number; queryTypes: string[]; errorReason?: string };
}

export interface CycleOptions {
  now: Date;
  /** How long a decision may be published without a newer one (absent: until replaced). */
  decisionTtlMs?: number;
  saturation: SaturationConfigSet;
  /**
   * Namespace-local saturation ConfigMaps (WVA since v0.5.1): a namespace's own configuration replaces
   * `saturation` for its models, as a whole. `enableLimiter` stays `saturation`'s (the GPUs are shared).
   */
  saturationByNamespace?: Readonly<Record<string, SaturationConfigSet>>;
  scaleToZero: (modelID: string, namespace: string) => ScaleToZeroPolicy;
  /** GPUs per accelerator type; required for the limiter (`enableLimiter` in the default entry). */
  gpuCapacityByType?: Readonly<Record<string, number>>;
  /** GPUs already in use per type; defaults to what the cycle's variants hold now. */
  gpuUsedByType?: Readonly<Record<string, number>>;
  /** The freshness limits, for the MetricsStale message (default: WVA's 1m and 5m). */
  freshness?: { freshThresholdMs: number; unavailableThresholdMs: number };
}

export interface ModelSummary {
  key: string;
  thresholds: SaturationThresholds;
  overrideKey?: string;
  analysis?: ModelAnalysis;
  inTransition: boolean;
  step?: TargetStep;
  enforcement?: 'scale-to-zero' | 'minimum-replica';
  note?: string;
  /** Set when Saturation V2 decided the model: its capacities, demand and supply. */
  v2?: V2Result;
}

export interface CycleResult {
  decisions: VariantDecision[];
  models: ModelSummary[];
  limiter: 'disabled' | 'applied' | 'no-inventory';
}

const clip = (s: string, n = 1024) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

function metricsCondition(status: 'True' | 'False', reason: string, message: string): DecisionCondition {
  return { type: ConditionType.MetricsAvailable, status, reason, message: clip(message) };
}
function optimizationCondition(status: 'True' | 'False', reason: string, message: string): DecisionCondition {
  return { type: ConditionType.OptimizationReady, status, reason, message: clip(message) };
}

/** Hold the last decision (or the current size) when there is nothing to decide on. */
const heldTarget = (v: ActiveVariant) => (v.desiredReplicas !== undefined && v.desiredReplicas > 0 ? v.desiredReplicas : v.currentReplicas);

function base(v: ActiveVariant, { decidedAt, validUntil }: Stamp) {
  return {
    key: v.key,
    vaName: v.vaName,
    namespace: v.namespace,
    modelID: v.modelID,
    variantName: v.variantName,
    ...(v.targetUid ? { targetUid: v.targetUid } : {}),
    accelerator: v.accelerator,
    cost: v.cost,
    currentReplicas: v.currentReplicas,
    ...(v.desiredReplicas !== undefined ? { previousDesiredReplicas: v.desiredReplicas } : {}),
    decidedAt,
    ...(validUntil !== undefined ? { validUntil } : {}),
    limited: false,
  };
}

export interface Stamp {
  decidedAt: string;
  validUntil: string | undefined;
}

/**
 * Without metrics each variant holds its last decision or its current size, and the policy still
 * applies (issue 14 scenario 9): a model with no requests over the retention period goes to zero
 * even when its pods report no saturation metrics.
 */
function fallbackDecisions(
  group: ModelGroup,
  stamp: Stamp,
  metrics: DecisionCondition,
  source: 'no-metrics' | 'stale-metrics' | 'prometheus-error' | 'prometheus-auth',
  why: string,
  policy?: { scaleToZero: ScaleToZeroPolicy; requestCount: RequestCount | undefined; pendingRequests: number | undefined },
): VariantDecision[] {
  const held = Object.fromEntries(group.variants.map((v) => [v.variantName, heldTarget(v)]));
  const enforced = policy
    ? enforcePolicy(held, Object.fromEntries(group.variants.map((v) => [v.variantName, v.cost])), policy.scaleToZero, policy.requestCount, policy.pendingRequests)
    : undefined;
  return group.variants.map((v) => {
    const desired = enforced?.targets[v.variantName] ?? held[v.variantName] ?? v.currentReplicas;
    const byPolicy = enforced?.applied !== undefined && desired !== held[v.variantName];
    const reason = byPolicy ? `${why}; ${enforced?.reason ?? enforced?.applied ?? ''}` : `${why}: holding ${desired} replica(s)`;
    return {
      ...base(v, stamp),
      desiredReplicas: desired,
      action: actionFor(v.currentReplicas, desired),
      source: byPolicy && enforced?.applied !== undefined ? enforced.applied : source,
      reason,
      metricsAvailable: metrics,
      optimizationReady: optimizationCondition('False', OptimizationReadyReason.MetricsUnavailable, reason),
    };
  });
}

function decideGroup(group: ModelGroup, inputs: GroupInputs | undefined, options: CycleOptions, stamp: Stamp): { decisions: VariantDecision[]; summary: ModelSummary; spare: Map<string, number> } {
  const { thresholds, overrideKey } = saturationThresholdsFor(options.saturationByNamespace?.[group.namespace] ?? options.saturation, group.modelID, group.namespace);
  const summaryBase = { key: group.key, thresholds, ...(overrideKey !== undefined ? { overrideKey } : {}) };
  const metrics = inputs?.metrics ?? { status: 'error', message: 'metrics were not collected' };

  if (metrics.status === 'error') {
    const cond = metrics.auth
      ? metricsCondition('False', MetricsAvailableReason.PrometheusError, `Prometheus refused the credentials: ${metrics.message}`)
      : metricsCondition('False', MetricsAvailableReason.PrometheusError, `Prometheus query failed: ${metrics.message}`);
    return {
      decisions: fallbackDecisions(group, stamp, cond, metrics.auth ? 'prometheus-auth' : 'prometheus-error', metrics.auth ? 'Prometheus refused the credentials' : 'metrics query failed'),
      summary: { ...summaryBase, inTransition: false, note: metrics.message },
      spare: new Map(),
    };
  }
  if (metrics.replicas.length === 0 && (metrics.stale?.length ?? 0) > 0) {
    const cond = metricsCondition('False', MetricsAvailableReason.MetricsStale, staleText(options, 'the pods of this model'));
    return {
      decisions: fallbackDecisions(group, stamp, cond, 'stale-metrics', 'stale saturation metrics', {
        scaleToZero: options.scaleToZero(group.modelID, group.namespace),
        requestCount: inputs?.requestCount,
        pendingRequests: inputs?.pendingRequests,
      }),
      summary: { ...summaryBase, inTransition: false, note: `stale metrics from ${metrics.stale?.map((p) => p.podName).join(', ') ?? ''}` },
      spare: new Map(),
    };
  }
  if (metrics.replicas.length === 0) {
    const cond = metricsCondition('False', MetricsAvailableReason.MetricsMissing, 'No saturation metrics for this model yet: pods may not be ready or not scraped');
    return {
      decisions: fallbackDecisions(group, stamp, cond, 'no-metrics', 'no saturation metrics', { scaleToZero: options.scaleToZero(group.modelID, group.namespace), requestCount: inputs?.requestCount, pendingRequests: inputs?.pendingRequests }),
      summary: { ...summaryBase, inTransition: false, note: 'no metrics' },
      spare: new Map(),
    };
  }

  const analysis = analyzeModelSaturation(metrics.replicas, thresholds, group.variants);
  // Saturation V2 when the ConfigMap selects it and the pods report their KV-cache size; else V1 (seed 003's).
  const wantsV2 = thresholds.analyzerName === V2_ANALYZER_NAME;
  const v2 = wantsV2 && hasCacheConfig(metrics.replicas) ? analyzeV2(metrics.replicas, group.variants, thresholds) : undefined;
  const v2Note = wantsV2 && v2 === undefined ? 'Saturation V2 selected, but no pod reports vllm:cache_config_info: V1 decided' : undefined;
  const computed = v2 !== undefined ? v2Targets(v2) : calculateSaturationTargets(analysis, group.variants);
  const costs = Object.fromEntries(group.variants.map((v) => [v.variantName, v.cost]));
  const policy = options.scaleToZero(group.modelID, group.namespace);
  const enforced = enforcePolicy(computed.targets, costs, policy, inputs?.requestCount, inputs?.pendingRequests);
  const byName = new Map(analysis.variants.map((a) => [a.variantName, a]));

  const decisions = group.variants.map((v): VariantDecision => {
    const saturationTarget = computed.targets[v.variantName] ?? v.currentReplicas;
    const desired = enforced.targets[v.variantName] ?? saturationTarget;
    const a = byName.get(v.variantName);
    const reporting = a?.replicaCount ?? 0;
    let source: VariantDecision['source'] = computed.inTransition ? 'transition' : 'saturation';
    let reason: string;
    if (desired !== saturationTarget && enforced.applied !== undefined) {
      source = enforced.applied;
      reason = enforced.reason ?? enforced.applied;
    } else if (computed.step.kind !== 'none' && (computed.step.variantName === v.variantName || (v2 !== undefined && saturationTarget !== v.currentReplicas))) {
      reason = computed.step.reason;
    } else if (computed.step.kind !== 'none') {
      reason = `no change here: the model's ${computed.step.kind} goes to variant ${computed.step.variantName}`;
    } else {
      reason = `no change: ${computed.step.reason}`;
    }
    return {
      ...base(v, stamp),
      desiredReplicas: desired,
      action: actionFor(v.currentReplicas, desired),
      source,
      reason,
      metricsAvailable:
        reporting > 0
          ? metricsCondition('True', MetricsAvailableReason.MetricsFound, `Saturation metrics from ${reporting} pod(s)`)
          : metrics.stale?.some((p) => p.variantName === v.variantName)
            ? metricsCondition('False', MetricsAvailableReason.MetricsStale, staleText(options, `the pods of ${v.targetKind ?? 'Deployment'} ${v.variantName}`))
            : metricsCondition('False', MetricsAvailableReason.MetricsMissing, `No saturation metrics from the pods of ${v.targetKind ?? 'Deployment'} ${v.variantName} yet: they may not be ready or not scraped`),
      optimizationReady: optimizationCondition('True', OptimizationReadyReason.OptimizationSucceeded, `${steadyText(reason, computed.step.kind === 'none' && !computed.inTransition)} (desired ${desired} replica(s))`),
    };
  });

  return {
    decisions,
    summary: {
      ...summaryBase,
      analysis,
      inTransition: computed.inTransition,
      step: computed.step,
      ...(enforced.applied !== undefined ? { enforcement: enforced.applied } : {}),
      ...(enforced.reason !== undefined || v2Note !== undefined ? { note: [v2Note, enforced.reason].filter((x) => x !== undefined).join('; ') } : {}),
      ...(v2 !== undefined ? { v2 } : {}),
    },
    spare: new Map(analysis.variants.map((a) => [a.variantName, a.avgSpareKv])),
  };
}

/** V2's targets in the shape V1's step has: no transition block (V2 counts starting replicas as anticipated supply). */
function v2Targets(v2: V2Result): { targets: Record<string, number>; inTransition: boolean; step: TargetStep } {
  const step: TargetStep = v2.step.kind === 'none' ? { kind: 'none', reason: `Saturation V2: ${v2.step.reason}` } : { kind: v2.step.kind, variantName: v2.step.variantName ?? '', reason: `Saturation V2: ${v2.step.reason}` };
  return { targets: v2.targets, inTransition: false, step };
}

/** MetricsStale's message: which limits (no live ages, so an unchanged state writes nothing). */
function staleText(options: CycleOptions, whose: string): string {
  const f = options.freshness ?? { freshThresholdMs: 60_000, unavailableThresholdMs: 300_000 };
  return (
    `Stale saturation metrics: no sample from ${whose} in the last ${formatPrometheusDuration(f.freshThresholdMs)} (PROMETHEUS_METRICS_CACHE_FRESH_THRESHOLD), ` +
    `the last one less than ${formatPrometheusDuration(f.unavailableThresholdMs)} old (PROMETHEUS_METRICS_CACHE_UNAVAILABLE_THRESHOLD): holding the last decision`
  );
}

/**
 * A "no change" reason as status shows it: without the live numbers in parentheses (spare KV cache
 * 0.312…), which move with every sample and would make every cycle rewrite every VA's status
 * (issue 14 scenario 8). The cycle record and the logs keep them.
 */
export function steadyText(reason: string, noChange: boolean): string {
  if (!noChange) return reason;
  // Parenthesised parts, nested ones included, go with the space before them.
  let out = '';
  let depth = 0;
  for (const ch of reason) {
    if (ch === '(') depth++;
    else if (ch === ')') depth = Math.max(0, depth - 1);
    else if (depth === 0) out += ch;
  }
  return out.replace(/\s+/g, ' ').replace(/\s([,;:])/g, '$1').trim();
}

/** When a cycle's decisions were made, and until when they may be published without a newer one. */
export function cycleStamp(options: Pick<CycleOptions, 'now' | 'decisionTtlMs'>): Stamp {
  return {
    decidedAt: formatConditionTime(options.now),
    validUntil: options.decisionTtlMs !== undefined ? formatConditionTime(new Date(options.now.getTime() + options.decisionTtlMs)) : undefined,
  };
}

export function decideCycle(groups: readonly ModelGroup[], inputs: Readonly<Record<string, GroupInputs>>, options: CycleOptions): CycleResult {
  const stamp = cycleStamp(options);
  const decisions: VariantDecision[] = [];
  const models: ModelSummary[] = [];
  const spareByKey = new Map<string, number>();
  const gpusByKey = new Map<string, number>();
  for (const g of groups) {
    const r = decideGroup(g, inputs[g.key], options, stamp);
    decisions.push(...r.decisions);
    models.push(r.summary);
    for (const v of g.variants) {
      spareByKey.set(v.key, r.spare.get(v.variantName) ?? 0);
      gpusByKey.set(v.key, v.gpusPerReplica);
    }
  }

  if (!options.saturation.default.enableLimiter) return { decisions, models, limiter: 'disabled' };
  if (options.gpuCapacityByType === undefined) return { decisions, models, limiter: 'no-inventory' };

  const limited = limitByGpus(
    decisions.map((d) => ({
      id: d.key,
      accelerator: d.accelerator,
      currentReplicas: d.currentReplicas,
      targetReplicas: d.desiredReplicas,
      gpusPerReplica: gpusByKey.get(d.key) ?? 1,
      spareCapacity: spareByKey.get(d.key) ?? 0,
      cost: d.cost,
    })),
    options.gpuCapacityByType,
    options.gpuUsedByType,
  );
  const out = decisions.map((d) => {
    const l = limited[d.key];
    if (!l || !l.wasLimited) return d;
    const reason = `${d.reason}; limited to ${l.targetReplicas} replica(s) by free ${d.accelerator} GPUs`;
    return {
      ...d,
      desiredReplicas: l.targetReplicas,
      action: actionFor(d.currentReplicas, l.targetReplicas),
      limited: true,
      reason,
      optimizationReady: optimizationCondition('True', OptimizationReadyReason.OptimizationSucceeded, `${reason} (desired ${l.targetReplicas} replica(s))`),
    };
  });
  return { decisions: out, models, limiter: 'applied' };
}
