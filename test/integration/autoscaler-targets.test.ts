import { AppsV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeRequest } from '../../kube/raw.js';
import { collectionPath, Resources } from '../../kube/resources.js';
import { msManifest } from '../fixtures/modelserving-fixtures.js';
import { condition, createVA, loadPods, waitForCondition } from './autoscaler-helpers.js';
import { HOT, startLoop, waitForScraped, type Loop } from './autoscaler-loop.js';

// Issue 31 item 4: besides Deployments, a VariantAutoscaling scales a StatefulSet, a LeaderWorkerSet or
// a ModelServing, read through its scale subresource; its status says which kind was resolved.
describe('reconcile-autoscaler: StatefulSet and ModelServing targets through the scale subresource (issue 31 item 4)', () => {
  let loop: Loop;

  beforeAll(async () => {
    loop = await startLoop('as-targets');
  });
  afterAll(async () => {
    await loop?.stop();
  });

  it('a StatefulSet: its pods (by the scale selector) report a saturated KV cache, and the decision is one more replica', async () => {
    const { sb, emitter } = loop;
    await sb.kc.makeApiClient(AppsV1Api).createNamespacedStatefulSet({
      namespace: sb.namespace,
      body: {
        metadata: { name: 'sts' },
        spec: {
          replicas: 1,
          serviceName: 'sts',
          selector: { matchLabels: { app: 'sts' } },
          template: { metadata: { labels: { app: 'sts' } }, spec: { containers: [{ name: 'vllm', image: 'vllm/vllm-openai:latest' }] } },
        },
      },
    });
    await createVA(sb, 'sts-va', { target: 'sts', kind: 'StatefulSet', model: 'sts-model' });
    await loadPods(sb, emitter, 'sts', 'sts-model', 1, HOT);
    await loop.waitForVllmSeries('sts-model', 1);
    await loop.cycle();
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'sts-va' }, 2);
    const va = await waitForCondition(sb, 'sts-va', 'TargetResolved', 'True', 'TargetFound');
    expect(condition(va.status, 'TargetResolved')?.message).toBe('Scale target StatefulSet sts found (scaled through its scale subresource)');
  });

  it("a ModelServing: resolved through its scale subresource; with no pods reporting yet, its current replicas are held", async () => {
    const { sb } = loop;
    await kubeRequest(sb.kc, collectionPath(Resources.modelServing, sb.namespace), { method: 'POST', body: msManifest('ms', sb.namespace, { replicas: 2 }) });
    await createVA(sb, 'ms-va', { target: 'ms', kind: 'ModelServing', model: 'ms-model' });
    await loop.cycle();
    const va = await waitForCondition(sb, 'ms-va', 'TargetResolved', 'True', 'TargetFound');
    expect(condition(va.status, 'TargetResolved')?.message).toBe('Scale target ModelServing ms found (scaled through its scale subresource)');
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'ms-va' }, 2);
  });
});
