/**
 * Which VAs take part in a cycle, and the model groups they form. A VA takes part when it is not
 * being deleted, belongs to this controller instance, and its Deployment exists, is not being
 * deleted and has replicas; variants of one modelID in one namespace are scaled together.
 */
import {
  ACCELERATOR_NAME_LABEL,
  CONTROLLER_INSTANCE_LABEL,
  variantCostOf,
  type VariantAutoscaling,
} from '../../../api/variantautoscaling.js';
import type { DeploymentFacts } from '../target/deployment-facts.js';
import { isSupportedTarget } from '../target/resolve.js';
import { normalizeAcceleratorName } from './limiter.js';

/** Written when no accelerator is known, so status and metrics are never silently skipped. */
export const UNRESOLVED_ACCELERATOR = 'unresolved';

export interface VariantCandidate {
  va: VariantAutoscaling;
  /** The variant's key when it is not `namespace/name` (a variant found on an annotated HPA or ScaledObject). */
  key?: string;
  /** The Deployment named by scaleTargetRef, undefined when it does not exist. */
  deployment: DeploymentFacts | undefined;
  /**
   * The last decision stored for this VA, and the uid of the Deployment it was made for. Not the
   * status's desiredOptimizedAlloc: that outlives the Deployment, and a Deployment recreated under
   * the same name must not inherit it (issue 14 scenario 2).
   */
  previous?: { desiredReplicas: number; targetUid?: string | undefined };
}

export interface ActiveVariant {
  key: string;
  vaName: string;
  namespace: string;
  modelID: string;
  variantName: string;
  /** The scale target's kind (target/kinds.ts); absent: Deployment. */
  targetKind?: string;
  cost: number;
  accelerator: string;
  acceleratorSource: 'label' | 'node-selector' | 'status' | 'unresolved';
  currentReplicas: number;
  readyReplicas: number;
  pendingReplicas: number;
  /** The previous decision for this very Deployment; absent when there was none. */
  desiredReplicas?: number;
  /** The Deployment's uid. */
  targetUid: string;
  /** When the Deployment was created (RFC 3339), when known. */
  createdAt?: string;
  gpusPerReplica: number;
}

export type InactiveReason =
  | 'deleting'
  | 'other-controller-instance'
  | 'unsupported-target'
  | 'target-not-found'
  | 'target-deleting'
  | 'target-scaled-to-zero'
  | 'duplicate-target';

export interface InactiveVariant {
  key: string;
  reason: InactiveReason;
  message: string;
  /**
   * A Deployment at 0 replicas keeps a series, with desired 0 (issue 14 scenario 3): what it shows.
   * The cycle writes it with its decisions, so no re-check can leave the series out between the
   * cycle and the VA's reconcile (KEDA would read an empty result and fall back).
   */
  zeroSeries?: { variantName: string; namespace: string; accelerator: string; current: number };
}

export interface ModelGroup {
  /** `modelID|namespace` */
  key: string;
  modelID: string;
  namespace: string;
  /** Sorted by variant name. */
  variants: ActiveVariant[];
}

export function modelGroupKey(modelID: string, namespace: string): string {
  return `${modelID}|${namespace}`;
}

/** With an instance configured, only VAs labelled with it; without one, every VA. */
export function belongsToInstance(va: Pick<VariantAutoscaling, 'metadata'>, controllerInstance: string | undefined): boolean {
  return controllerInstance === undefined || va.metadata.labels?.[CONTROLLER_INSTANCE_LABEL] === controllerInstance;
}

function accelerator(va: VariantAutoscaling, d: DeploymentFacts): Pick<ActiveVariant, 'accelerator' | 'acceleratorSource'> {
  const label = va.metadata.labels?.[ACCELERATOR_NAME_LABEL];
  if (label !== undefined && label.length >= 2) return { accelerator: label, acceleratorSource: 'label' };
  const product = d.gpuProduct !== undefined ? normalizeAcceleratorName(d.gpuProduct) : undefined;
  if (product !== undefined && product.length >= 2) return { accelerator: product, acceleratorSource: 'node-selector' };
  const previous = va.status?.desiredOptimizedAlloc?.accelerator;
  if (previous !== undefined && previous !== UNRESOLVED_ACCELERATOR) return { accelerator: previous, acceleratorSource: 'status' };
  return { accelerator: UNRESOLVED_ACCELERATOR, acceleratorSource: 'unresolved' };
}

const nameOf = (c: VariantCandidate) => c.key ?? `${c.va.metadata.namespace ?? ''}/${c.va.metadata.name ?? ''}`;

export function selectActiveVariants(
  candidates: readonly VariantCandidate[],
  options: { controllerInstance?: string } = {},
): { groups: ModelGroup[]; inactive: InactiveVariant[]; atZero: ModelGroup[] } {
  const inactive: InactiveVariant[] = [];
  const active: ActiveVariant[] = [];
  const zero: ActiveVariant[] = [];
  const claimed = new Map<string, string>();
  for (const c of [...candidates].sort((a, b) => (nameOf(a) < nameOf(b) ? -1 : nameOf(a) > nameOf(b) ? 1 : 0))) {
    const key = nameOf(c);
    const { va, deployment: d } = c;
    const ref = va.spec.scaleTargetRef;
    const skip = (reason: InactiveReason, message: string) => inactive.push({ key, reason, message });
    if (va.metadata.deletionTimestamp) { skip('deleting', 'VariantAutoscaling is being deleted'); continue; }
    if (!belongsToInstance(va, options.controllerInstance)) { skip('other-controller-instance', `not labelled ${CONTROLLER_INSTANCE_LABEL}=${options.controllerInstance ?? ''}`); continue; }
    if (!isSupportedTarget(ref)) { skip('unsupported-target', `scaleTargetRef ${ref.kind} is not a kind the autoscaler scales`); continue; }
    if (d === undefined) { skip('target-not-found', `${ref.kind} ${ref.name} not found`); continue; }
    if (d.deleting) { skip('target-deleting', `${ref.kind} ${ref.name} is being deleted`); continue; }
    const targetKey = `${va.metadata.namespace ?? ''}/${ref.kind}/${ref.name}`;
    if (d.specReplicas <= 0) {
      const v = variantOf(c, key, d);
      inactive.push({
        key,
        reason: 'target-scaled-to-zero',
        message: `${ref.kind} ${ref.name} has 0 replicas`,
        zeroSeries: { variantName: v.variantName, namespace: v.namespace, accelerator: v.accelerator, current: v.currentReplicas },
      });
      // A candidate for scale from zero (one VA per Deployment, as below).
      if (!claimed.has(targetKey)) {
        claimed.set(targetKey, va.metadata.name ?? '');
        zero.push(v);
      }
      continue;
    }
    const owner = claimed.get(targetKey);
    if (owner !== undefined) { skip('duplicate-target', `${ref.kind} ${ref.name} is already scaled by VariantAutoscaling ${owner}`); continue; }
    claimed.set(targetKey, va.metadata.name ?? '');
    active.push(variantOf(c, key, d));
  }
  return { groups: groupByModel(active), inactive, atZero: groupByModel(zero) };
}

function variantOf(c: VariantCandidate, key: string, d: DeploymentFacts): ActiveVariant {
  const { va } = c;
  const ref = va.spec.scaleTargetRef;
  // A decision made for an earlier Deployment of the same name (deleted, recreated) is no previous decision.
  const desired = c.previous !== undefined && (c.previous.targetUid === undefined || c.previous.targetUid === d.uid) ? c.previous.desiredReplicas : undefined;
  return {
    key,
    vaName: va.metadata.name ?? '',
    namespace: va.metadata.namespace ?? '',
    modelID: va.spec.modelID,
    variantName: ref.name,
    ...(ref.kind !== 'Deployment' ? { targetKind: ref.kind } : {}),
    targetUid: d.uid,
    cost: variantCostOf(va),
    ...accelerator(va, d),
    currentReplicas: d.currentReplicas,
    readyReplicas: d.readyReplicas,
    pendingReplicas: d.pendingReplicas,
    ...(desired !== undefined ? { desiredReplicas: desired } : {}),
    gpusPerReplica: d.gpusPerReplica,
    ...(d.createdAt !== undefined ? { createdAt: d.createdAt } : {}),
  };
}

function groupByModel(variants: readonly ActiveVariant[]): ModelGroup[] {
  const groups = new Map<string, ModelGroup>();
  for (const v of variants) {
    const k = modelGroupKey(v.modelID, v.namespace);
    const g = groups.get(k) ?? { key: k, modelID: v.modelID, namespace: v.namespace, variants: [] };
    g.variants.push(v);
    groups.set(k, g);
  }
  const sorted = [...groups.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  for (const g of sorted) g.variants.sort((a, b) => (a.variantName < b.variantName ? -1 : a.variantName > b.variantName ? 1 : 0));
  return sorted;
}

/**
 * Whether a cycle's reason for leaving a VA out still holds for the Deployment as read now: one that
 * was missing and exists, or was at 0 and has replicas, is no reason any more, and the VA asks for a
 * cycle instead of waiting for the tick (issue 14 scenario 1).
 */
export function inactiveStillApplies(reason: string, d: Pick<DeploymentFacts, 'deleting' | 'specReplicas'>): boolean {
  if (reason === 'target-not-found') return false;
  if (reason === 'target-deleting') return d.deleting;
  if (reason === 'target-scaled-to-zero') return d.specReplicas <= 0;
  return true;
}
