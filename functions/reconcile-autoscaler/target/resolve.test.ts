import { describe, expect, it } from 'vitest';
import { parseVariantAutoscaling, type VariantAutoscaling } from '../../../api/variantautoscaling.js';
import { deployment } from '../saturation/test-helpers.js';
import { resolveTarget, vasTargetingDeployment } from './resolve.js';

function va(name: string, target: string, namespace = 'default', kind = 'Deployment'): VariantAutoscaling {
  const r = parseVariantAutoscaling({ metadata: { name, namespace }, spec: { scaleTargetRef: { kind, name: target }, modelID: 'meta/llama-3.1-8b' } });
  if (!r.ok) throw new Error(r.errors.join());
  return r.value;
}

describe('resolveTarget (seed 003)', () => {
  it('TargetResolved=True/TargetFound when the Deployment exists', () => {
    expect(resolveTarget(va('llama-8b-autoscaler', 'llama-8b'), deployment('llama-8b', 3, { namespace: 'default' }))).toEqual({
      found: true,
      condition: { type: 'TargetResolved', status: 'True', reason: 'TargetFound', message: 'Scale target Deployment llama-8b found' },
    });
  });

  it('TargetResolved=False/TargetNotFound and everything cleared when it does not', () => {
    expect(resolveTarget(va('llama-8b-autoscaler', 'llama-8b'), undefined)).toEqual({
      found: false,
      condition: { type: 'TargetResolved', status: 'False', reason: 'TargetNotFound', message: 'Scale target Deployment llama-8b not found' },
      cleared: {
        metricsAvailable: { type: 'MetricsAvailable', status: 'False', reason: 'MetricsMissing', message: 'No metrics: scale target Deployment llama-8b is gone' },
        optimizationReady: { type: 'OptimizationReady', status: 'False', reason: 'MetricsUnavailable', message: 'Not optimized until scale target Deployment llama-8b exists' },
        currentReplicas: 0,
        removeMetrics: true,
        ready: { type: 'Ready', status: 'False', reason: 'DeploymentNotFound', message: 'Scale target Deployment llama-8b not found' },
      },
    });
  });

  it('False before the Deployment exists, True once it is created (the race of example 2)', () => {
    const v = va('llama-8b-autoscaler', 'llama-8b');
    expect(resolveTarget(v, undefined).condition.status).toBe('False');
    expect(resolveTarget(v, deployment('llama-8b', 1)).condition.status).toBe('True');
  });

  it('treats a Deployment being deleted as gone', () => {
    const r = resolveTarget(va('v', 'd'), deployment('d', 1, { deleting: true }));
    expect(r.found).toBe(false);
    expect(r.condition).toMatchObject({ reason: 'TargetNotFound', message: 'Scale target Deployment d not found: it is being deleted' });
  });

  it('reports a target of a kind it does not scale', () => {
    const r = resolveTarget(va('v', 'rs', 'default', 'ReplicaSet'), undefined);
    expect(r.condition).toMatchObject({
      status: 'False',
      reason: 'TargetNotFound',
      message: 'Scale target ReplicaSet rs not supported: scaleTargetRef must name one of apps/v1 Deployment, apps/v1 StatefulSet, leaderworkerset.x-k8s.io/v1 LeaderWorkerSet, workload.serving.volcano.sh/v1alpha1 ModelServing',
    });
  });

  it('resolves a StatefulSet, a LeaderWorkerSet and a ModelServing, saying which kind (issue 31 item 4)', () => {
    for (const kind of ['StatefulSet', 'LeaderWorkerSet', 'ModelServing']) {
      const r = resolveTarget(va('v', 't', 'default', kind), { ...deployment('t', 2), kind });
      expect(r.found).toBe(true);
      expect(r.condition).toMatchObject({ status: 'True', reason: 'TargetFound', message: `Scale target ${kind} t found (scaled through its scale subresource)` });
    }
    // A Deployment of the same name is not the StatefulSet the VA names.
    expect(resolveTarget(va('v', 't', 'default', 'StatefulSet'), deployment('t', 2)).condition.message).toBe('Scale target StatefulSet t not found');
  });
});

describe('vasTargetingDeployment (Deployment create/delete → VAs to reconcile)', () => {
  it('finds the VAs in the namespace whose scaleTargetRef names the Deployment', () => {
    const vas = [va('b', 'llama-8b'), va('a', 'llama-8b'), va('c', 'other'), va('d', 'llama-8b', 'elsewhere'), va('e', 'llama-8b', 'default', 'StatefulSet')];
    expect(vasTargetingDeployment(vas, { namespace: 'default', name: 'llama-8b' })).toEqual(['default/a', 'default/b']);
    expect(vasTargetingDeployment(vas, { namespace: 'default', name: 'none' })).toEqual([]);
  });
});
