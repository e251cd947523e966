import type { V1Deployment } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { deploymentFacts, scaleTargetFacts } from './deployment-facts.js';

const base = (over: Partial<V1Deployment> = {}): V1Deployment => ({
  metadata: { name: 'llama', namespace: 'llm', uid: 'u-1' },
  spec: {
    replicas: 3,
    selector: { matchLabels: { app: 'llama' } },
    template: { metadata: { labels: { app: 'llama' } }, spec: { containers: [{ name: 'vllm', resources: { requests: { 'nvidia.com/gpu': '2' } } }, { name: 'sidecar' }] } },
  },
  status: { replicas: 3, readyReplicas: 2 },
  ...over,
});

describe('deploymentFacts', () => {
  it('reads replicas, pending pods and GPUs per replica', () => {
    expect(deploymentFacts(base())).toEqual({
      kind: 'Deployment',
      name: 'llama',
      uid: 'u-1',
      namespace: 'llm',
      deleting: false,
      specReplicas: 3,
      currentReplicas: 3,
      readyReplicas: 2,
      pendingReplicas: 1,
      gpusPerReplica: 2,
      selector: { matchLabels: { app: 'llama' } },
    });
  });

  it('uses spec.replicas while status says 0, and never a negative pending count', () => {
    expect(deploymentFacts(base({ status: {} }))).toMatchObject({ currentReplicas: 3, readyReplicas: 0, pendingReplicas: 3 });
    expect(deploymentFacts(base({ status: { replicas: 1, readyReplicas: 2 } }))).toMatchObject({ currentReplicas: 1, pendingReplicas: 0 });
  });

  it('defaults to 1 GPU, sums vendors, and finds the GPU product pinned by selector or affinity', () => {
    const d = base();
    d.spec!.template.spec = { containers: [{ name: 'x' }], nodeSelector: { 'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3' } };
    expect(deploymentFacts(d)).toMatchObject({ gpusPerReplica: 1, gpuProduct: 'NVIDIA-H100-80GB-HBM3' });
    d.spec!.template.spec = {
      containers: [{ name: 'x', resources: { requests: { 'amd.com/gpu': '1', 'intel.com/gpu': '1' } } }],
      affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'amd.com/gpu.product', operator: 'In', values: ['AMD-MI300X'] }] }] } } },
    };
    expect(deploymentFacts(d)).toMatchObject({ gpusPerReplica: 2, gpuProduct: 'AMD-MI300X' });
  });

  it('notices a deletion in progress', () => {
    expect(deploymentFacts(base({ metadata: { name: 'llama', namespace: 'llm', deletionTimestamp: new Date() } })).deleting).toBe(true);
  });
});

describe('scaleTargetFacts (StatefulSet, LeaderWorkerSet, ModelServing through the scale subresource; issue 31 item 4)', () => {
  it("reads replicas and the pod selector from /scale, ready ones from the object's status", () => {
    const lws = scaleTargetFacts(
      'LeaderWorkerSet',
      { metadata: { name: 'lws', namespace: 'llm', uid: 'u-2' }, status: { readyReplicas: 1 }, podSpec: { containers: [{ name: 'w', resources: { requests: { 'nvidia.com/gpu': '4' } } }] } },
      { spec: { replicas: 2 }, status: { replicas: 2, selector: 'leaderworkerset.sigs.k8s.io/name=lws,leaderworkerset.sigs.k8s.io/worker-index=0' } },
    );
    expect(lws).toEqual({
      kind: 'LeaderWorkerSet',
      name: 'lws',
      uid: 'u-2',
      namespace: 'llm',
      deleting: false,
      specReplicas: 2,
      currentReplicas: 2,
      readyReplicas: 1,
      pendingReplicas: 1,
      gpusPerReplica: 4,
      selector: { matchLabels: { 'leaderworkerset.sigs.k8s.io/name': 'lws', 'leaderworkerset.sigs.k8s.io/worker-index': '0' } },
    });
  });

  it('uses spec.replicas while /scale reports no status, availableReplicas when there is no readyReplicas (ModelServing), and no selector when none is reported', () => {
    const ms = scaleTargetFacts('ModelServing', { metadata: { name: 'ms' }, status: { availableReplicas: 5 } }, { spec: { replicas: 3 } });
    expect(ms).toMatchObject({ kind: 'ModelServing', specReplicas: 3, currentReplicas: 3, readyReplicas: 3, pendingReplicas: 0, gpusPerReplica: 1 });
    expect(ms.selector).toBeUndefined();
  });
});
