/**
 * From a model's analysis to a replica target per variant: at most one replica more or less per
 * model per cycle, and nothing at all while any variant of the model is still moving.
 */
import { byCostThenName, type ModelAnalysis, type VariantState } from './types.js';

export type TargetStep =
  | { kind: 'scale-up'; variantName: string; reason: string }
  | { kind: 'scale-down'; variantName: string; reason: string }
  | { kind: 'none'; reason: string };

export interface SaturationTargets {
  /** Target per variant name, for every variant in `states`. */
  targets: Record<string, number>;
  inTransition: boolean;
  /** Why the model counts as moving, one line per variant. */
  transitionReasons: string[];
  step: TargetStep;
}

const hasDesired = (s: VariantState): s is VariantState & { desiredReplicas: number } => s.desiredReplicas !== undefined && s.desiredReplicas !== 0;

/**
 * A model is in transition while a variant's last decision has not been carried out yet
 * (desired ≠ current) or its pods are not all reporting (metrics ≠ current). Then every variant
 * keeps its pending decision or its current size. Otherwise each variant starts from the number of
 * pods reporting; scale-up adds one replica to the cheapest variant without pending pods, else a
 * safe scale-down removes one from the most expensive variant above one replica.
 */
export function calculateSaturationTargets(analysis: ModelAnalysis, states: readonly VariantState[]): SaturationTargets {
  const metricsCount = new Map(analysis.variants.map((v) => [v.variantName, v.replicaCount]));
  const sorted = [...states].sort((a, b) => (a.variantName < b.variantName ? -1 : a.variantName > b.variantName ? 1 : 0));
  const reasons: string[] = [];
  for (const s of sorted) {
    if (hasDesired(s) && s.desiredReplicas !== s.currentReplicas) {
      reasons.push(`${s.variantName}: desired ${s.desiredReplicas} ≠ current ${s.currentReplicas}`);
    }
    const reporting = metricsCount.get(s.variantName) ?? 0;
    if (reporting !== s.currentReplicas) reasons.push(`${s.variantName}: ${reporting} pod(s) reporting metrics ≠ current ${s.currentReplicas}`);
  }

  const targets: Record<string, number> = {};
  if (reasons.length > 0) {
    for (const s of sorted) targets[s.variantName] = hasDesired(s) && s.desiredReplicas !== s.currentReplicas ? s.desiredReplicas : s.currentReplicas;
    return { targets, inTransition: true, transitionReasons: reasons, step: { kind: 'none', reason: `model in transition (${reasons.join('; ')})` } };
  }

  for (const s of sorted) targets[s.variantName] = metricsCount.get(s.variantName) ?? 0;

  if (analysis.shouldScaleUp) {
    const candidates = sorted.filter((s) => s.pendingReplicas <= 0).sort(byCostThenName);
    const pick = candidates[0];
    if (!pick) {
      return { targets, inTransition: false, transitionReasons: [], step: { kind: 'none', reason: `scale-up needed (${analysis.scaleUpReason ?? ''}) but every variant has pods still starting` } };
    }
    targets[pick.variantName] = (targets[pick.variantName] ?? 0) + 1;
    return {
      targets,
      inTransition: false,
      transitionReasons: [],
      step: { kind: 'scale-up', variantName: pick.variantName, reason: `${analysis.scaleUpReason ?? 'spare capacity low'}: adding a replica to the cheapest variant ${pick.variantName} (cost ${pick.cost})` },
    };
  }

  if (analysis.scaleDownSafe) {
    const candidates = sorted.filter((s) => (targets[s.variantName] ?? 0) > 1).sort(byCostThenName);
    const pick = candidates[candidates.length - 1];
    if (pick) {
      targets[pick.variantName] = (targets[pick.variantName] ?? 0) - 1;
      return {
        targets,
        inTransition: false,
        transitionReasons: [],
        step: { kind: 'scale-down', variantName: pick.variantName, reason: `spare capacity allows it (${analysis.scaleDownReason ?? ''}): removing a replica from the most expensive variant ${pick.variantName} (cost ${pick.cost})` },
      };
    }
    return { targets, inTransition: false, transitionReasons: [], step: { kind: 'none', reason: 'scale-down would be safe but every variant is at one replica' } };
  }

  return { targets, inTransition: false, transitionReasons: [], step: { kind: 'none', reason: `spare capacity within bounds (${analysis.scaleDownReason ?? 'no scale-down'})` } };
}
