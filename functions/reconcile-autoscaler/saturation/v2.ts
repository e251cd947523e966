/**
 * Saturation V2, current WVA's token-capacity analyzer (llm-d-autoscaling, `internal/engines/analyzers/
 * saturation_v2` and the cost-aware optimizer; upstream's default analyzer since v0.9.0), as one pure
 * planner step: the model's replicas and variants in, per-variant capacities, the model's demand and
 * supply, and each variant's target out. Selected per model by `analyzerName: saturation` in the
 * saturation ConfigMap, as upstream selects it.
 *
 * Per replica (with `vllm:cache_config_info`): KV capacity C = num_gpu_blocks × block_size tokens;
 * tokens in use = round(kv × C); k1 (memory-bound) = C × kvCacheThreshold; k2 (compute-bound) = the tokens
 * in use when its queue is at or above queueLengthThreshold (what it holds when it cannot take more),
 * else k1; its capacity is min(k1, k2). Per variant: the median capacity of its reporting replicas,
 * supply = ready replicas × that, anticipated supply = (ready + pending) × that, demand = the tokens its
 * replicas hold. Per model: required = max(0, demand / scaleUpThreshold − anticipated supply), spare =
 * max(0, supply − demand / scaleDownBoundary). Required > 0 adds ⌈required / capacity⌉ replicas to the
 * most cost-efficient variant (cost per token of capacity) without pending replicas; otherwise spare > 0
 * removes ⌊spare / capacity⌋ from the most expensive variants first, the cheapest never below 1.
 *
 * Not carried over from upstream (they need state across cycles or inputs Ripple does not collect): the
 * rolling k2 history per output-length bucket, k2 derived from the engine's arguments, the queued
 * requests' prompt tokens in the demand (upstream adds them only when it knows the average input
 * length), and the gateway queue's demand.
 */
import type { SaturationThresholds } from '../config/saturation-config.js';
import type { ReplicaMetrics } from './types.js';

/** What one reporting replica says, with its cache configuration when `vllm:cache_config_info` was scraped. */
export type V2Replica = ReplicaMetrics;

export interface V2Variant {
  variantName: string;
  cost: number;
  currentReplicas: number;
  pendingReplicas: number;
}

export interface V2VariantCapacity {
  variantName: string;
  /** Tokens one replica can hold before saturating; 0 when none of its replicas reports a cache configuration. */
  perReplicaCapacity: number;
  readyReplicas: number;
  supply: number;
  demand: number;
  kvTokensUsed: number;
  kvTokensCapacity: number;
  /** demand / supply (0 without supply). */
  utilization: number;
}

export interface V2Result {
  variants: V2VariantCapacity[];
  totalDemand: number;
  totalSupply: number;
  anticipatedSupply: number;
  requiredCapacity: number;
  spareCapacity: number;
  /** Per variant: current replicas, changed by the step below. */
  targets: Record<string, number>;
  step: { kind: 'scale-up' | 'scale-down' | 'none'; variantName?: string; replicas?: number; reason: string };
}

export type V2Thresholds = Pick<SaturationThresholds, 'kvCacheThreshold' | 'queueLengthThreshold' | 'scaleUpThreshold' | 'scaleDownBoundary'>;

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  // Upstream takes the upper middle of an even list.
  return s[m] ?? 0;
}

/** Whether the model can be analysed by V2 at all: some replica reports its KV-cache size. */
export function hasCacheConfig(replicas: readonly V2Replica[]): boolean {
  return replicas.some((r) => (r.numGpuBlocks ?? 0) > 0 && (r.blockSize ?? 0) > 0);
}

export function analyzeV2(replicas: readonly V2Replica[], variants: readonly V2Variant[], t: V2Thresholds): V2Result {
  const perVariant = new Map<string, { caps: number[]; demand: number; used: number; capacity: number }>();
  for (const r of replicas) {
    const capacityTokens = (r.numGpuBlocks ?? 0) * (r.blockSize ?? 0);
    if (!(capacityTokens > 0)) continue;
    const inUse = Math.min(capacityTokens, Math.max(0, Math.round(r.kvCacheUsage * capacityTokens)));
    const k1 = Math.floor(capacityTokens * t.kvCacheThreshold);
    const k2 = r.queueLength >= t.queueLengthThreshold && inUse > 0 ? inUse : k1;
    const v = perVariant.get(r.variantName) ?? { caps: [], demand: 0, used: 0, capacity: 0 };
    v.caps.push(Math.min(k1, k2));
    v.demand += inUse;
    v.used += inUse;
    v.capacity += capacityTokens;
    perVariant.set(r.variantName, v);
  }

  const capacities: V2VariantCapacity[] = variants.map((s) => {
    const v = perVariant.get(s.variantName);
    const prc = v ? median(v.caps) : 0;
    const ready = Math.max(0, s.currentReplicas - s.pendingReplicas);
    const supply = ready * prc;
    const demand = v?.demand ?? 0;
    return { variantName: s.variantName, perReplicaCapacity: prc, readyReplicas: ready, supply, demand, kvTokensUsed: v?.used ?? 0, kvTokensCapacity: v?.capacity ?? 0, utilization: supply > 0 ? demand / supply : 0 };
  });
  const totalDemand = capacities.reduce((a, c) => a + c.demand, 0);
  const totalSupply = capacities.reduce((a, c) => a + c.supply, 0);
  const state = new Map(variants.map((s) => [s.variantName, s]));
  const anticipatedSupply = capacities.reduce((a, c) => a + (c.readyReplicas + (state.get(c.variantName)?.pendingReplicas ?? 0)) * c.perReplicaCapacity, 0);
  const requiredCapacity = t.scaleUpThreshold > 0 ? Math.max(0, totalDemand / t.scaleUpThreshold - anticipatedSupply) : 0;
  const spareCapacity = t.scaleDownBoundary > 0 ? Math.max(0, totalSupply - totalDemand / t.scaleDownBoundary) : 0;

  const targets = Object.fromEntries(variants.map((s) => [s.variantName, s.currentReplicas]));
  const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  const fmt = (n: number) => String(Math.round(n));
  // Live numbers in parentheses: a "no change" status drops them (engine.ts steadyText), so it is not rewritten every cycle.
  let step: V2Result['step'] = { kind: 'none', reason: `token demand within capacity (demand ${fmt(totalDemand)}, supply ${fmt(totalSupply)} tokens): scale-up above ${t.scaleUpThreshold}, scale-down below ${t.scaleDownBoundary} of it` };

  if (requiredCapacity > 0) {
    const pick = capacities
      .filter((c) => c.perReplicaCapacity > 0 && (state.get(c.variantName)?.pendingReplicas ?? 0) === 0)
      .sort((a, b) => (state.get(a.variantName)?.cost ?? 0) / a.perReplicaCapacity - (state.get(b.variantName)?.cost ?? 0) / b.perReplicaCapacity || byName(a.variantName, b.variantName))[0];
    if (pick) {
      const n = Math.ceil(requiredCapacity / pick.perReplicaCapacity);
      targets[pick.variantName] = (targets[pick.variantName] ?? 0) + n;
      step = { kind: 'scale-up', variantName: pick.variantName, replicas: n, reason: `token demand above scaleUpThreshold ${t.scaleUpThreshold} of capacity (demand ${fmt(totalDemand)}, ${fmt(requiredCapacity)} tokens more needed): +${n} replica(s) of ${pick.variantName} (${fmt(pick.perReplicaCapacity)} tokens each)` };
    } else {
      step = { kind: 'none', reason: `more token capacity needed (${fmt(requiredCapacity)} tokens), but every variant has replicas starting` };
    }
  } else if (spareCapacity > 0) {
    // Most expensive first (ties: smaller capacity first, then by name); the cheapest is kept at 1 while
    // no more expensive variant holds replicas.
    const order = capacities
      .filter((c) => c.perReplicaCapacity > 0)
      .sort((a, b) => (state.get(b.variantName)?.cost ?? 0) - (state.get(a.variantName)?.cost ?? 0) || a.perReplicaCapacity - b.perReplicaCapacity || byName(a.variantName, b.variantName));
    let spare = spareCapacity;
    let total = 0;
    const removed: string[] = [];
    order.forEach((c, i) => {
      const current = targets[c.variantName] ?? 0;
      let n = Math.min(current, Math.floor(spare / c.perReplicaCapacity));
      const othersHold = order.slice(0, i).some((o) => (targets[o.variantName] ?? 0) > 0);
      if (i === order.length - 1 && current - n < 1 && !othersHold) n = current - 1;
      if (n <= 0) return;
      targets[c.variantName] = current - n;
      spare -= n * c.perReplicaCapacity;
      total += n;
      removed.push(`-${n} ${c.variantName}`);
    });
    if (removed.length > 0) {
      step = { kind: 'scale-down', variantName: removed[0]?.split(' ')[1] ?? '', replicas: total, reason: `token demand below scaleDownBoundary ${t.scaleDownBoundary} of capacity (demand ${fmt(totalDemand)}, ${fmt(spareCapacity)} tokens spare): ${removed.join(', ')}` };
    }
  }
  return { variants: capacities, totalDemand, totalSupply, anticipatedSupply, requiredCapacity, spareCapacity, targets, step };
}
