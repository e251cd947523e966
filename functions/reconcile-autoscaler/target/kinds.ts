/**
 * The kinds a VariantAutoscaling may scale. Deployments are read as WVA v0.5.0 reads them; the others
 * through their scale subresource (`/scale`: replicas and the pod selector), which is what an HPA or
 * KEDA moves: StatefulSets and LeaderWorkerSets as current WVA knows them, and Ripple's ModelServing,
 * which no peer autoscales.
 */
import type { VariantAutoscaling } from '../../../api/variantautoscaling.js';
import { apiVersionOf, Resources, type ResourceRef } from '../../../kube/resources.js';

export interface TargetKind {
  kind: string;
  resource: ResourceRef;
  /** Where the pod template's spec is in the object (GPUs per replica), when it has one. */
  podSpecPath: readonly string[];
}

export const STATEFUL_SET: ResourceRef = { group: 'apps', version: 'v1', kind: 'StatefulSet', plural: 'statefulsets', namespaced: true };
export const LEADER_WORKER_SET: ResourceRef = { group: 'leaderworkerset.x-k8s.io', version: 'v1', kind: 'LeaderWorkerSet', plural: 'leaderworkersets', namespaced: true };

export const TARGET_KINDS: readonly TargetKind[] = [
  { kind: 'Deployment', resource: Resources.deployment, podSpecPath: ['spec', 'template', 'spec'] },
  { kind: 'StatefulSet', resource: STATEFUL_SET, podSpecPath: ['spec', 'template', 'spec'] },
  // A group's GPUs are its workers'; the leader's template is usually the same model server.
  { kind: 'LeaderWorkerSet', resource: LEADER_WORKER_SET, podSpecPath: ['spec', 'leaderWorkerTemplate', 'workerTemplate', 'spec'] },
  { kind: 'ModelServing', resource: Resources.modelServing, podSpecPath: [] },
];

type TargetRef = VariantAutoscaling['spec']['scaleTargetRef'];

/** The kind `scaleTargetRef` names, when it is one this autoscaler scales (apiVersion left out, or that kind's). */
export function targetKindOf(ref: TargetRef): TargetKind | undefined {
  const k = TARGET_KINDS.find((t) => t.kind === ref.kind);
  if (k === undefined) return undefined;
  return ref.apiVersion === undefined || ref.apiVersion === '' || ref.apiVersion === apiVersionOf(k.resource) ? k : undefined;
}

export const SUPPORTED_KINDS_TEXT = TARGET_KINDS.map((k) => `${apiVersionOf(k.resource)} ${k.kind}`).join(', ');
