import { AppsV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCycleRecord } from '../../functions/reconcile-autoscaler/state.js';
import { waitFor } from '../harness/sandbox.js';
import { createDeployment, createVA, runningPods, upsertConfigMap } from './autoscaler-helpers.js';
import { HOT, startLoop, waitForScraped, type Loop } from './autoscaler-loop.js';

// Issue 14 scenario 9, the parts a sandbox shows: two Deployments whose selectors overlap must not
// freeze their model in transition, and a model whose pods report no saturation metrics still goes
// through the scale-to-zero policy.
describe('reconcile-autoscaler: the cycle survives overlapping selectors and missing metrics (issue 14 scenario 9)', () => {
  let loop: Loop;

  beforeAll(async () => {
    loop = await startLoop('as-robust');
  });
  afterAll(async () => {
    await loop?.stop();
  });

  it("overlapping selectors: the broad Deployment's selector also matches the other's pods; the model is not frozen in transition and scales up", async () => {
    const { sb, emitter } = loop;
    const apps = sb.kc.makeApiClient(AppsV1Api);
    const make = async (name: string, labels: Record<string, string>, selector: Record<string, string>) =>
      apps.createNamespacedDeployment({
        namespace: sb.namespace,
        body: {
          metadata: { name },
          spec: { replicas: 1, selector: { matchLabels: selector }, template: { metadata: { labels }, spec: { containers: [{ name: 'vllm', image: 'vllm/vllm-openai:latest' }] } } },
        },
      });
    // ov-broad selects app=ov, which ov-narrow's pods carry too.
    await make('ov-broad', { app: 'ov', tier: 'broad' }, { app: 'ov' });
    await make('ov-narrow', { app: 'ov', tier: 'narrow' }, { app: 'ov', tier: 'narrow' });
    await createVA(sb, 'ov-broad', { model: 'ov-model', cost: '10' });
    await createVA(sb, 'ov-narrow', { model: 'ov-model', cost: '50' });
    const pods = await waitFor('one running pod each', 60_000, async () => {
      const all = await sb.core.listNamespacedPod({ namespace: sb.namespace, labelSelector: 'app=ov' });
      const running = all.items.filter((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp);
      return running.length === 2 ? running.map((p) => p.metadata?.name ?? '') : undefined;
    }, 250);
    for (const pod of pods) emitter.set(sb.namespace, 'ov-model', pod, HOT);
    await loop.waitForVllmSeries('ov-model', 2);
    await loop.cycle();
    // Saturated and not frozen: one more replica for the cheaper variant. (Frozen, both would hold at 1,
    // ov-narrow's pod matching two selectors and counting for neither.)
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'ov-broad' }, 2);
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'ov-narrow' }, 1);
    const record = await readCycleRecord(sb.redis, sb.prefix);
    // Now it waits for the Deployment to follow (nobody actuates here), with both pods counted.
    expect(record?.models.find((m) => m.key === `ov-model|${sb.namespace}`)?.replicas).toBe(2);
  });

  it('no saturation metrics from the pods, scale-to-zero on and no requests over the retention period → desired 0', async () => {
    const { sb, emitter } = loop;
    await upsertConfigMap(sb, 'model-scale-to-zero-config', {
      nm: `model_id: nm-model\nnamespace: ${sb.namespace}\nenable_scale_to_zero: true\nretention_period: 1m\n`,
    });
    await createDeployment(sb, 'nm', 1);
    await createVA(sb, 'nm', { model: 'nm-model' });
    await waitFor('its pod', 60_000, async () => ((await runningPods(sb, 'nm')).length === 1 ? true : undefined), 250);
    // Only a pod that is gone still has series: the model's running pods report nothing, and no
    // request succeeded over the retention period.
    emitter.set(sb.namespace, 'nm-model', 'nm-gone-pod', { kvCacheUsage: 0.2, waiting: 0 });
    await waitFor('the request count over the retention period', 30_000, async () => {
      const r = await loop.query(`sum(increase(vllm:request_success_total{namespace="${sb.namespace}",model_name="nm-model"}[1m]))`);
      return r.length === 1 && r[0]?.value === 0 ? true : undefined;
    });
    await loop.cycle();
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'nm' }, 0);
    const record = await readCycleRecord(sb.redis, sb.prefix);
    expect(record?.decisions.find((d) => d.key === `${sb.namespace}/nm`)).toMatchObject({ desiredReplicas: 0, source: 'scale-to-zero' });
  });
});
