/**
 * Saturation analysis of one model (all its variants in one namespace): which replicas are
 * saturated, how much spare capacity the others have, whether to add a replica and whether one
 * could be removed safely.
 */
import type { SaturationThresholds } from '../config/saturation-config.js';
import { DEFAULT_VARIANT_COST } from '../../../api/variantautoscaling.js';
import type { ModelAnalysis, ReplicaMetrics, VariantAnalysis, VariantInfo } from './types.js';

/** Scale-down needs at least this many non-saturated replicas to spread the load over. */
export const MIN_NON_SATURATED_FOR_SCALE_DOWN = 2;

export function isSaturated(r: Pick<ReplicaMetrics, 'kvCacheUsage' | 'queueLength'>, t: SaturationThresholds): boolean {
  return r.kvCacheUsage >= t.kvCacheThreshold || r.queueLength >= t.queueLengthThreshold;
}

function analyzeVariant(info: VariantInfo, pods: readonly ReplicaMetrics[], t: SaturationThresholds): VariantAnalysis {
  let spareKv = 0;
  let spareQueue = 0;
  let nonSaturated = 0;
  let maxKv = 0;
  let maxQueue = 0;
  const saturated: string[] = [];
  for (const p of pods) {
    if (isSaturated(p, t)) saturated.push(p.podName);
    else {
      spareKv += t.kvCacheThreshold - p.kvCacheUsage;
      spareQueue += t.queueLengthThreshold - p.queueLength;
      nonSaturated++;
    }
    maxKv = Math.max(maxKv, p.kvCacheUsage);
    maxQueue = Math.max(maxQueue, p.queueLength);
  }
  return {
    ...info,
    replicaCount: pods.length,
    nonSaturatedCount: nonSaturated,
    saturatedReplicas: saturated.sort(),
    maxKvCacheUsage: maxKv,
    maxQueueLength: maxQueue,
    avgSpareKv: nonSaturated > 0 ? spareKv / nonSaturated : 0,
    avgSpareQueue: nonSaturated > 0 ? spareQueue / nonSaturated : 0,
  };
}

const fmt = (n: number, digits: number) => n.toFixed(digits);

function scaleUp(avgSpareKv: number, avgSpareQueue: number, t: SaturationThresholds): { up: boolean; reason?: string } {
  const kv = avgSpareKv < t.kvSpareTrigger;
  const queue = avgSpareQueue < t.queueSpareTrigger;
  const parts: string[] = [];
  if (kv) parts.push(`average spare KV cache ${fmt(avgSpareKv, 3)} < ${fmt(t.kvSpareTrigger, 3)}`);
  if (queue) parts.push(`average spare queue ${fmt(avgSpareQueue, 1)} < ${fmt(t.queueSpareTrigger, 1)}`);
  return parts.length > 0 ? { up: true, reason: parts.join(' and ') } : { up: false };
}

/**
 * Would the non-saturated replicas still have spare capacity at or above the triggers if one of
 * them were removed and its load spread over the rest?
 */
function scaleDown(nonSaturated: number, avgSpareKv: number, avgSpareQueue: number, t: SaturationThresholds): { safe: boolean; reason: string } {
  if (nonSaturated < MIN_NON_SATURATED_FOR_SCALE_DOWN) {
    return { safe: false, reason: `only ${nonSaturated} non-saturated replica(s); need ${MIN_NON_SATURATED_FOR_SCALE_DOWN}` };
  }
  const factor = nonSaturated / (nonSaturated - 1);
  const kvAfter = t.kvCacheThreshold - (t.kvCacheThreshold - avgSpareKv) * factor;
  const queueAfter = t.queueLengthThreshold - (t.queueLengthThreshold - avgSpareQueue) * factor;
  const safe = kvAfter >= t.kvSpareTrigger && queueAfter >= t.queueSpareTrigger;
  return {
    safe,
    reason: `with one replica fewer: spare KV cache ${fmt(kvAfter, 3)} (trigger ${fmt(t.kvSpareTrigger, 3)}), spare queue ${fmt(queueAfter, 1)} (trigger ${fmt(t.queueSpareTrigger, 1)})`,
  };
}

/**
 * Analyse a model. `variants` lists every variant of the model, so a variant whose pods report
 * nothing still appears (with 0 replicas); pods of variants not listed count with the default cost.
 */
export function analyzeModelSaturation(replicas: readonly ReplicaMetrics[], thresholds: SaturationThresholds, variants: readonly VariantInfo[] = []): ModelAnalysis {
  const info = new Map(variants.map((v) => [v.variantName, v]));
  const pods = new Map<string, ReplicaMetrics[]>();
  for (const v of variants) pods.set(v.variantName, []);
  for (const r of replicas) {
    const list = pods.get(r.variantName) ?? [];
    list.push(r);
    pods.set(r.variantName, list);
  }
  const analyses = [...pods.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, list]) => analyzeVariant(info.get(name) ?? { variantName: name, cost: DEFAULT_VARIANT_COST, accelerator: '' }, list, thresholds));

  if (replicas.length === 0) {
    return { totalReplicas: 0, nonSaturatedCount: 0, avgSpareKv: 0, avgSpareQueue: 0, shouldScaleUp: false, scaleDownSafe: false, scaleDownReason: 'no metrics', variants: analyses };
  }

  let nonSaturated = 0;
  let spareKv = 0;
  let spareQueue = 0;
  for (const a of analyses) {
    nonSaturated += a.nonSaturatedCount;
    spareKv += a.avgSpareKv * a.nonSaturatedCount;
    spareQueue += a.avgSpareQueue * a.nonSaturatedCount;
  }
  const avgSpareKv = nonSaturated > 0 ? spareKv / nonSaturated : 0;
  const avgSpareQueue = nonSaturated > 0 ? spareQueue / nonSaturated : 0;
  const up = scaleUp(avgSpareKv, avgSpareQueue, thresholds);
  const down = scaleDown(nonSaturated, avgSpareKv, avgSpareQueue, thresholds);
  return {
    totalReplicas: replicas.length,
    nonSaturatedCount: nonSaturated,
    avgSpareKv,
    avgSpareQueue,
    shouldScaleUp: up.up,
    ...(up.reason !== undefined ? { scaleUpReason: up.reason } : {}),
    scaleDownSafe: down.safe,
    scaleDownReason: down.reason,
    variants: analyses,
  };
}
