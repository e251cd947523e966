/** Plain data the saturation engine works on. A "variant" is one VA and its Deployment, named by the Deployment. */

/** Peak metrics of one serving pod over the query window. */
export interface ReplicaMetrics {
  podName: string;
  /** The Deployment the pod belongs to. */
  variantName: string;
  /** KV-cache use, 0..1. */
  kvCacheUsage: number;
  /** Requests waiting. */
  queueLength: number;
  /** From `vllm:cache_config_info`, collected for Saturation V2 only. */
  numGpuBlocks?: number;
  blockSize?: number;
}

/** What the analyzer needs to know about a variant besides its pods' metrics. */
export interface VariantInfo {
  variantName: string;
  cost: number;
  accelerator: string;
}

export interface VariantAnalysis extends VariantInfo {
  /** Pods that reported metrics. */
  replicaCount: number;
  nonSaturatedCount: number;
  saturatedReplicas: string[];
  maxKvCacheUsage: number;
  maxQueueLength: number;
  /** Averages over this variant's non-saturated pods; 0 when there are none. */
  avgSpareKv: number;
  avgSpareQueue: number;
}

export interface ModelAnalysis {
  totalReplicas: number;
  nonSaturatedCount: number;
  /** Averages over all non-saturated pods of the model; 0 when there are none. */
  avgSpareKv: number;
  avgSpareQueue: number;
  shouldScaleUp: boolean;
  scaleUpReason?: string;
  scaleDownSafe: boolean;
  scaleDownReason?: string;
  /** Sorted by variant name. */
  variants: VariantAnalysis[];
}

/** The replica counts of a variant's Deployment and its previous decision. */
export interface VariantState {
  variantName: string;
  cost: number;
  /** Deployment `status.replicas`, or `spec.replicas` while status says 0. */
  currentReplicas: number;
  /** Pods that exist but are not ready yet. */
  pendingReplicas: number;
  /** The last decision (`status.desiredOptimizedAlloc.numReplicas`); 0 or absent means none. */
  desiredReplicas?: number;
}

export type ScalingAction = 'scale-up' | 'scale-down' | 'no-change';

export function actionFor(current: number, target: number): ScalingAction {
  if (target > current) return 'scale-up';
  if (target < current) return 'scale-down';
  return 'no-change';
}

/** Ties between equal costs are broken by name so every worker picks the same variant. */
export function byCostThenName(a: { cost: number; variantName: string }, b: { cost: number; variantName: string }): number {
  return a.cost - b.cost || (a.variantName < b.variantName ? -1 : a.variantName > b.variantName ? 1 : 0);
}
