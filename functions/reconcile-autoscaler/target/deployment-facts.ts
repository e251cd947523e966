/**
 * The few facts about a scale target the autoscaler decides on: a Deployment read from its API object,
 * the other kinds (target/kinds.ts) from their object and its scale subresource.
 */
import type { V1Deployment, V1LabelSelector, V1PodSpec } from '@kubernetes/client-node';
import { parseSelectorString } from './selector.js';

export interface DeploymentFacts {
  /** The target's kind (`Deployment`, `StatefulSet`, `LeaderWorkerSet`, `ModelServing`). */
  kind: string;
  name: string;
  /** Tells a recreated Deployment from the one a decision was made for. */
  uid: string;
  namespace: string;
  deleting: boolean;
  /** `spec.replicas` (the API defaults it to 1). */
  specReplicas: number;
  /** `status.replicas`, or `spec.replicas` while status still says 0. */
  currentReplicas: number;
  readyReplicas: number;
  /** Pods that exist but are not ready yet (never negative). */
  pendingReplicas: number;
  /** Sum of GPU requests over the pod's containers; 1 when none is requested. */
  gpusPerReplica: number;
  /** The GPU product the pods are pinned to by node selector or required node affinity. */
  gpuProduct?: string;
  /** RFC 3339 creation time: a young Deployment's pods are re-checked for metrics sooner than the tick. */
  createdAt?: string;
  /** Which pods are the target's: the Deployment's `spec.selector`, or the scale subresource's selector. */
  selector?: V1LabelSelector;
}

const GPU_RESOURCES = ['nvidia.com/gpu', 'amd.com/gpu', 'intel.com/gpu'];
const GPU_PRODUCT_LABELS = ['nvidia.com/gpu.product', 'amd.com/gpu.product', 'intel.com/gpu.product'];

function wholeQuantity(q: unknown): number {
  const n = typeof q === 'number' ? q : typeof q === 'string' && /^\d+$/.test(q.trim()) ? Number(q.trim()) : 0;
  return Number.isFinite(n) ? n : 0;
}

export function gpusPerReplica(spec: V1PodSpec | undefined): number {
  let total = 0;
  for (const c of spec?.containers ?? []) {
    const requests = (c.resources?.requests ?? {}) as Record<string, unknown>;
    for (const r of GPU_RESOURCES) total += wholeQuantity(requests[r]);
  }
  return total > 0 ? total : 1;
}

export function gpuProduct(spec: V1PodSpec | undefined): string | undefined {
  for (const key of GPU_PRODUCT_LABELS) {
    const v = spec?.nodeSelector?.[key];
    if (v) return v;
  }
  for (const term of spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? []) {
    for (const e of term.matchExpressions ?? []) {
      if (GPU_PRODUCT_LABELS.includes(e.key) && e.operator === 'In' && e.values?.length === 1 && e.values[0]) return e.values[0];
    }
  }
  return undefined;
}

export function deploymentFacts(d: V1Deployment): DeploymentFacts {
  const specReplicas = d.spec?.replicas ?? 1;
  const statusReplicas = d.status?.replicas ?? 0;
  const current = statusReplicas > 0 ? statusReplicas : specReplicas;
  const ready = d.status?.readyReplicas ?? 0;
  const product = gpuProduct(d.spec?.template?.spec);
  return {
    kind: 'Deployment',
    name: d.metadata?.name ?? '',
    uid: d.metadata?.uid ?? '',
    namespace: d.metadata?.namespace ?? '',
    deleting: d.metadata?.deletionTimestamp !== undefined && d.metadata.deletionTimestamp !== null,
    specReplicas,
    currentReplicas: current,
    readyReplicas: ready,
    pendingReplicas: Math.max(0, current - ready),
    gpusPerReplica: gpusPerReplica(d.spec?.template?.spec),
    ...(product !== undefined ? { gpuProduct: product } : {}),
    ...(d.metadata?.creationTimestamp ? { createdAt: new Date(d.metadata.creationTimestamp).toISOString() } : {}),
    ...(d.spec?.selector ? { selector: d.spec.selector } : {}),
  };
}

/** A target read through its scale subresource (`autoscaling/v1` Scale) beside its own object. */
export interface ScaleRead {
  spec?: { replicas?: number };
  status?: { replicas?: number; selector?: string };
}

export interface TargetObject {
  metadata: { name: string; namespace?: string; uid?: string; deletionTimestamp?: string; creationTimestamp?: string };
  status?: { readyReplicas?: number; availableReplicas?: number };
  /** The pod template's spec, when the kind has one (target/kinds.ts's podSpecPath). */
  podSpec?: V1PodSpec;
}

/**
 * Facts of a StatefulSet, LeaderWorkerSet or ModelServing: replicas as its scale subresource reports
 * them (a LeaderWorkerSet's and a ModelServing's are groups, not pods), ready ones from its status
 * (`readyReplicas`, else `availableReplicas`), and its pods by the scale subresource's selector.
 */
export function scaleTargetFacts(kind: string, o: TargetObject, scale: ScaleRead): DeploymentFacts {
  const specReplicas = scale.spec?.replicas ?? 1;
  const statusReplicas = scale.status?.replicas ?? 0;
  const current = statusReplicas > 0 ? statusReplicas : specReplicas;
  const ready = Math.min(current, o.status?.readyReplicas ?? o.status?.availableReplicas ?? 0);
  const product = gpuProduct(o.podSpec);
  const selector = parseSelectorString(scale.status?.selector);
  return {
    kind,
    name: o.metadata.name,
    uid: o.metadata.uid ?? '',
    namespace: o.metadata.namespace ?? '',
    deleting: o.metadata.deletionTimestamp !== undefined,
    specReplicas,
    currentReplicas: current,
    readyReplicas: ready,
    pendingReplicas: Math.max(0, current - ready),
    gpusPerReplica: gpusPerReplica(o.podSpec),
    ...(product !== undefined ? { gpuProduct: product } : {}),
    ...(o.metadata.creationTimestamp ? { createdAt: new Date(o.metadata.creationTimestamp).toISOString() } : {}),
    ...(selector !== undefined ? { selector } : {}),
  };
}
