/**
 * Scale from zero (issue 14 scenario 5), as pure planning. A Deployment at 0 replicas is left out of
 * the saturation cycle (it has no pods to measure), so without this the enforcer's 0 would be a
 * one-way door. WVA v0.5.0's scale-from-zero engine wakes a variant at zero when the inference
 * gateway's endpoint picker (EPP) holds requests for its model in its flow-control queue; here the
 * cycle asks Prometheus for that queue and decides desired 1 for one variant, which the HPA/KEDA
 * then acts on like any other decision.
 */
import { ConditionType, MetricsAvailableReason, OptimizationReadyReason } from '../../../api/variantautoscaling.js';
import type { ModelGroup } from './active-variants.js';
import type { VariantDecision } from './decision.js';
import { byCostThenName } from './types.js';

/** Requests waiting in the gateway for a model: `none` when no EPP series exists for it at all. */
export type PendingRequests = { status: 'ok'; pending: number } | { status: 'none' } | { status: 'error'; message: string };

export interface FromZeroPlan {
  decisions: VariantDecision[];
  /** Per model at zero, what was seen and done (for the cycle record). */
  models: Array<{ key: string; pending: PendingRequests; woke?: string }>;
  /** Some model at zero has a scraped gateway: worth looking again soon rather than at the next tick. */
  watched: boolean;
}

const WAKE_MESSAGE = "scale from zero: requests for the model are waiting in the inference gateway's queue";

/**
 * `atZero`: variants whose Deployment has 0 replicas, by model. A model with an active variant
 * elsewhere is left to the saturation cycle (its pods are the ones the gateway sends to). Of a model
 * entirely at zero with waiting requests, only the cheapest variant is woken (ties by name), as the
 * enforcer keeps one replica on the cheapest variant (WVA v0.5.0 wakes every variant of the model,
 * which its code marks as a TODO).
 */
export function planScaleFromZero(
  atZero: readonly ModelGroup[],
  activeModels: ReadonlySet<string>,
  pending: Readonly<Record<string, PendingRequests>>,
  stamp: { decidedAt: string; validUntil?: string | undefined },
): FromZeroPlan {
  const decisions: VariantDecision[] = [];
  const models: FromZeroPlan['models'] = [];
  let watched = false;
  for (const g of atZero) {
    if (activeModels.has(g.key)) continue;
    const p = pending[g.key] ?? { status: 'none' };
    if (p.status === 'ok') watched = true;
    if (p.status !== 'ok' || !(p.pending > 0) || g.variants.length === 0) {
      models.push({ key: g.key, pending: p });
      continue;
    }
    const v = [...g.variants].sort(byCostThenName)[0]!;
    models.push({ key: g.key, pending: p, woke: v.variantName });
    decisions.push({
      key: v.key,
      vaName: v.vaName,
      namespace: v.namespace,
      modelID: v.modelID,
      variantName: v.variantName,
      targetUid: v.targetUid,
      accelerator: v.accelerator,
      cost: v.cost,
      currentReplicas: v.currentReplicas,
      ...(v.desiredReplicas !== undefined ? { previousDesiredReplicas: v.desiredReplicas } : {}),
      desiredReplicas: 1,
      action: 'scale-up',
      source: 'scale-from-zero',
      reason: `${WAKE_MESSAGE} (${p.pending}): waking the cheapest variant ${v.variantName}`,
      limited: false,
      decidedAt: stamp.decidedAt,
      ...(stamp.validUntil !== undefined ? { validUntil: stamp.validUntil } : {}),
      // No live numbers in conditions: they would rewrite status every cycle (issue 14 scenario 8).
      metricsAvailable: {
        type: ConditionType.MetricsAvailable,
        status: 'True',
        reason: MetricsAvailableReason.MetricsFound,
        message: "Requests for the model are waiting in the inference gateway's flow-control queue",
      },
      optimizationReady: {
        type: ConditionType.OptimizationReady,
        status: 'True',
        reason: OptimizationReadyReason.OptimizationSucceeded,
        message: `${WAKE_MESSAGE} (desired 1 replica(s))`,
      },
    });
  }
  return { decisions, models, watched };
}
