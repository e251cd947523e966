/**
 * What one optimization cycle adds to the operator metrics (operator-metrics.ts): a pure function of
 * what the cycle saw and decided. No clock, no I/O: the cycle passes its own duration.
 */
import type { ModelGroup } from '../saturation/active-variants.js';
import type { VariantDecision } from '../saturation/decision.js';
import type { GroupInputs, ModelSummary } from '../saturation/engine.js';
import {
  COMPONENT,
  counterIncrement,
  ERROR_TYPE,
  GPU_LIMITER_NAME,
  histogramIncrements,
  mergeIncrements,
  OPERATOR_METRIC,
  POLICY_TYPE,
  QUERY_TYPE,
  UNIT,
  type Increment,
  type OperatorGauges,
} from './operator-metrics.js';

export interface CycleObservationInput {
  groups: readonly ModelGroup[];
  inputs: Readonly<Record<string, GroupInputs>>;
  models: readonly ModelSummary[];
  decisions: readonly VariantDecision[];
  /** Per namespace: pod name → the variant (target name) it belongs to, as the cycle listed them. */
  podVariantByNs: ReadonlyMap<string, ReadonlyMap<string, string>>;
  config: OperatorGauges['config'];
  /** `variant_name` of a counter for this VA (the same choice as the replica gauges'). */
  variantNameOf: (vaKey: string, targetName: string) => string;
  /** Models at zero whose gateway queue could not be read. */
  pendingErrors: number;
}

const FRESH_SOURCES = new Set<VariantDecision['source']>(['saturation', 'transition']);

export function cycleObservations(input: CycleObservationInput): { gauges: OperatorGauges; increments: Increment[] } {
  const incs: Increment[] = [];
  const podsDiscovered: Record<string, number> = {};
  const decisionByKey = new Map(input.decisions.map((d) => [d.key, d]));
  const modelByKey = new Map(input.models.map((m) => [m.key, m]));
  const variants: OperatorGauges['variants'] = [];

  for (const g of input.groups) {
    const inputsOf = input.inputs[g.key];
    const metrics = inputsOf?.metrics;
    const discovered = (podsDiscovered[g.namespace] ??= 0);
    const collection = inputsOf?.collection;
    if (collection !== undefined) {
      for (const q of collection.queryTypes) {
        incs.push(...histogramIncrements(OPERATOR_METRIC.collectionDuration, { query_type: q }, collection.seconds));
        if (collection.errorReason !== undefined) incs.push(counterIncrement(OPERATOR_METRIC.collectionErrors, { query_type: q, reason: collection.errorReason }));
      }
    }
    if (metrics?.status === 'error') incs.push(counterIncrement(OPERATOR_METRIC.errors, { component: COMPONENT.collector, error_type: ERROR_TYPE.replicaMetrics }));
    if (inputsOf?.requestCount?.status === 'error') incs.push(counterIncrement(OPERATOR_METRIC.errors, { component: COMPONENT.enforcer, error_type: ERROR_TYPE.requestCount }));
    if (metrics?.status === 'ok') podsDiscovered[g.namespace] = discovered + metrics.replicas.length;

    const model = modelByKey.get(g.key);
    const podVariant = input.podVariantByNs.get(g.namespace) ?? new Map<string, string>();
    for (const v of g.variants) {
      const listed = [...podVariant.values()].filter((name) => name === v.variantName).length;
      const freshness: Record<string, number> = {};
      let saturation: OperatorGauges['variants'][number]['saturation'];
      if (metrics?.status === 'ok') {
        const pods = metrics.replicas.filter((r) => r.variantName === v.variantName);
        const stale = (metrics.stale ?? []).filter((p) => p.variantName === v.variantName).length;
        freshness['fresh'] = pods.length;
        freshness['stale'] = stale;
        freshness['missing'] = Math.max(0, listed - pods.length - stale);
        const analysis = model?.analysis;
        const v2 = model?.v2?.variants.find((c) => c.variantName === v.variantName);
        if (model?.v2 !== undefined && v2 !== undefined && v2.perReplicaCapacity > 0) {
          // Saturation V2: token demand over token supply, and the model's token signals.
          saturation = {
            utilization: v2.utilization,
            spare: model.v2.spareCapacity,
            required: model.v2.requiredCapacity,
            unit: UNIT.continuous,
            kvTokensUsed: v2.kvTokensUsed,
            kvTokensCapacity: v2.kvTokensCapacity,
          };
        } else if (pods.length > 0 && analysis !== undefined) {
          saturation = {
            utilization: pods.reduce((a, p) => a + p.kvCacheUsage, 0) / pods.length,
            spare: analysis.avgSpareKv,
            required: analysis.shouldScaleUp ? 1 : 0,
            unit: UNIT.binary,
          };
        }
      } else {
        freshness['unavailable'] = listed;
      }
      const decision = decisionByKey.get(v.key);
      variants.push({
        vaKey: v.key,
        targetName: v.variantName,
        namespace: v.namespace,
        modelID: v.modelID,
        accelerator: v.accelerator,
        freshness,
        ...(saturation !== undefined ? { saturation } : {}),
        up: decision !== undefined && FRESH_SOURCES.has(decision.source),
      });
    }
  }

  for (const d of input.decisions) {
    if (d.limited) incs.push(counterIncrement(OPERATOR_METRIC.decisionsLimited, { variant_name: input.variantNameOf(d.key, d.variantName), namespace: d.namespace, limiter_name: GPU_LIMITER_NAME }));
    if (d.source === 'scale-to-zero' || d.source === 'minimum-replica') incs.push(counterIncrement(OPERATOR_METRIC.enforcerModifications, { policy_type: POLICY_TYPE[d.source] }));
  }
  if (input.pendingErrors > 0) incs.push(counterIncrement(OPERATOR_METRIC.errors, { component: COMPONENT.collector, error_type: ERROR_TYPE.pendingRequests }, input.pendingErrors));

  return {
    gauges: { modelsProcessed: input.models.length, config: input.config, podsDiscovered, variants },
    increments: mergeIncrements(incs),
  };
}

/** The query types one model's collection times: the two saturation queries, and the request count when scale-to-zero asks for it. */
export function collectedQueryTypes(requestCount: boolean): string[] {
  return [QUERY_TYPE.kvCache, QUERY_TYPE.queueLength, ...(requestCount ? [QUERY_TYPE.requestCount] : [])];
}
