/** Builders shared by this folder's tests (not used by production code). */
import { parseVariantAutoscaling, type VariantAutoscaling } from '../../../api/variantautoscaling.js';
import type { DeploymentFacts } from '../target/deployment-facts.js';
import type { VariantCandidate } from './active-variants.js';

export interface VaOptions {
  namespace?: string;
  modelID?: string;
  cost?: string;
  accelerator?: string;
  target?: string;
  desired?: number;
  labels?: Record<string, string>;
}

export function va(name: string, o: VaOptions = {}): VariantAutoscaling {
  const labels = { ...(o.accelerator !== undefined ? { 'inference.optimization/acceleratorName': o.accelerator } : {}), ...(o.labels ?? {}) };
  const r = parseVariantAutoscaling({
    apiVersion: 'llmd.ai/v1alpha1',
    kind: 'VariantAutoscaling',
    metadata: { name, namespace: o.namespace ?? 'llm', generation: 1, labels },
    spec: { scaleTargetRef: { kind: 'Deployment', name: o.target ?? name }, modelID: o.modelID ?? 'meta/llama-3.1-8b', ...(o.cost !== undefined ? { variantCost: o.cost } : {}) },
    ...(o.desired !== undefined ? { status: { desiredOptimizedAlloc: { accelerator: o.accelerator ?? 'A100', numReplicas: o.desired } } } : {}),
  });
  if (!r.ok) throw new Error(r.errors.join('\n'));
  return r.value;
}

export function deployment(name: string, replicas: number, o: { namespace?: string; ready?: number; gpus?: number; deleting?: boolean; specReplicas?: number } = {}): DeploymentFacts {
  const ready = o.ready ?? replicas;
  return {
    kind: 'Deployment',
    name,
    uid: `${name}-uid`,
    namespace: o.namespace ?? 'llm',
    deleting: o.deleting ?? false,
    specReplicas: o.specReplicas ?? replicas,
    currentReplicas: replicas,
    readyReplicas: ready,
    pendingReplicas: Math.max(0, replicas - ready),
    gpusPerReplica: o.gpus ?? 1,
  };
}

/** A candidate; `desired` given to `va()` stands for the previous decision, made for this very Deployment. */
export function candidate(v: VariantAutoscaling, d: DeploymentFacts | undefined, previous?: { desiredReplicas: number; targetUid?: string }): VariantCandidate {
  const fromVa = v.status?.desiredOptimizedAlloc?.numReplicas;
  const prev = previous ?? (fromVa !== undefined ? { desiredReplicas: fromVa, ...(d ? { targetUid: d.uid } : {}) } : undefined);
  return { va: v, deployment: d, ...(prev ? { previous: prev } : {}) };
}
