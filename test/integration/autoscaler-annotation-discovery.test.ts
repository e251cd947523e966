import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { annotatedVariantKey } from '../../functions/reconcile-autoscaler/keys.js';
import { readCycleRecord } from '../../functions/reconcile-autoscaler/state.js';
import { kubeRequest } from '../../kube/raw.js';
import { collectionPath, objectPath, Resources } from '../../kube/resources.js';
import { eventRequestsKey } from '../../runtime/event-sink.js';
import { waitFor } from '../harness/sandbox.js';
import { createDeployment, createVA, loadPods, waitForCondition } from './autoscaler-helpers.js';
import { HOT, STEADY, startLoop, waitForScraped, type Loop } from './autoscaler-loop.js';

/** Well under one tick (an hour here): the HPA's own watch event brings the cycle. */
const AT_ONCE_MS = 25_000;

function hpa(name: string, target: string, annotations: Record<string, string>) {
  return {
    apiVersion: 'autoscaling/v2',
    kind: 'HorizontalPodAutoscaler',
    metadata: { name, annotations },
    spec: {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: target },
      minReplicas: 1,
      maxReplicas: 4,
      metrics: [{ type: 'External', external: { metric: { name: 'wva_desired_replicas', selector: { matchLabels: { variant_name: name } } }, target: { type: 'AverageValue', averageValue: '1' } } }],
    },
  };
}

// Issue 31 item 5: current WVA finds its variants on HPAs and ScaledObjects annotated llm-d.ai/managed,
// llm-d.ai/model-id and llm-d.ai/variant-cost instead of the VariantAutoscaling CRD. Before, Ripple read only
// VariantAutoscalings: an annotated HPA got no wva_desired_replicas at all. Both discovery modes run side by
// side here, in one namespace, with seed 003's VA winning where both name the same Deployment.
describe('reconcile-autoscaler: variants found on annotated HPAs, beside VariantAutoscalings (issue 31 item 5)', () => {
  let loop: Loop;

  beforeAll(async () => {
    loop = await startLoop('as-annot');
  });
  afterAll(async () => {
    await loop?.stop();
  });

  const create = (body: ReturnType<typeof hpa>) => kubeRequest(loop.sb.kc, collectionPath(Resources.horizontalPodAutoscaler, loop.sb.namespace), { method: 'POST', body });

  it('an annotated HPA is a variant at once: its decision and wva_desired_replicas{variant_name=<hpa>}; a VA on another Deployment of the model runs beside it', async () => {
    const { sb, emitter } = loop;
    await createDeployment(sb, 'an-a', 1);
    await createDeployment(sb, 'an-b', 1);
    await loadPods(sb, emitter, 'an-a', 'an-model', 1, STEADY);
    await loadPods(sb, emitter, 'an-b', 'an-model', 1, STEADY);
    await loop.waitForVllmSeries('an-model', 2);
    await createVA(sb, 'an-b-va', { target: 'an-b', model: 'an-model', cost: '20' });
    const created = Date.now();
    await create(hpa('an-a-hpa', 'an-a', { 'llm-d.ai/managed': 'true', 'llm-d.ai/model-id': 'an-model', 'llm-d.ai/variant-cost': '5' }));

    // No cycle is run by hand: the HPA's Create reaches the cycle through the watcher.
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'an-a-hpa' }, 1, AT_ONCE_MS);
    expect(Date.now() - created).toBeLessThan(AT_ONCE_MS + 5_000);
    const record = await readCycleRecord(sb.redis, sb.prefix);
    const key = annotatedVariantKey(sb.namespace, 'an-a-hpa', 'HorizontalPodAutoscaler');
    expect(record?.decisions.find((d) => d.key === key)).toMatchObject({ desiredReplicas: 1, source: 'saturation' });
    // One model group: the HPA's variant and the VA's variant are analysed together.
    expect(record?.models.map((m) => m.key)).toEqual([`an-model|${sb.namespace}`]);
    expect(record?.models[0]?.replicas).toBe(2);
    await waitForCondition(sb, 'an-b-va', 'OptimizationReady', 'True', 'OptimizationSucceeded');
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'an-b-va' }, 1);
  });

  it('load on the HPA’s Deployment: the cheaper variant (the HPA’s, cost 5) is scaled up, a ScaledUp Event on the HPA says so', async () => {
    const { sb, emitter } = loop;
    await loadPods(sb, emitter, 'an-a', 'an-model', 1, HOT);
    await loadPods(sb, emitter, 'an-b', 'an-model', 1, HOT);
    // The hot values reach Prometheus with its next scrape: a cycle run at once may still read the steady ones
    // (on an idle machine it did), so run cycles until one has decided on the hot load.
    const key = annotatedVariantKey(sb.namespace, 'an-a-hpa', 'HorizontalPodAutoscaler');
    await waitFor('a cycle that read the hot load', 30_000, async () => {
      await loop.cycle();
      return (await readCycleRecord(sb.redis, sb.prefix))?.decisions.find((d) => d.key === key)?.desiredReplicas === 2 ? true : undefined;
    }, 1_000);
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'an-a-hpa' }, 2);
    expect(await loop.scraped('wva_desired_replicas', { variant_name: 'an-b-va' })).toBe(1);
    const events = async () =>
      (await sb.redis.lrange(eventRequestsKey(sb.prefix, `${sb.namespace}/HorizontalPodAutoscaler/an-a-hpa`), 0, -1)).map((t) => JSON.parse(t) as { reason: string; type: string; message: string });
    const up = await waitFor('a ScaledUp Event on the HPA', 20_000, async () => (await events()).find((e) => e.reason === 'ScaledUp'));
    expect(up.type).toBe('Normal');
    expect(up.message).toContain('desired 2 replica(s) for Deployment an-a');
  });

  it('a VA and an annotated HPA on the same Deployment: the VA wins, the HPA gets no series of its own', async () => {
    const { sb } = loop;
    await create(hpa('an-b-hpa', 'an-b', { 'llm-d.ai/managed': 'true', 'llm-d.ai/model-id': 'an-model' }));
    await loop.cycle();
    const record = await readCycleRecord(sb.redis, sb.prefix);
    expect(record?.decisions.map((d) => d.key)).not.toContain(annotatedVariantKey(sb.namespace, 'an-b-hpa', 'HorizontalPodAutoscaler'));
    expect(record?.decisions.map((d) => d.key)).toContain(`${sb.namespace}/an-b-va`);
    await loop.quiet();
    expect(await loop.scrapedCount('wva_desired_replicas', { variant_name: 'an-b-hpa' })).toBe(0);
  });

  it('llm-d.ai/managed removed: the variant goes, and its series with it, without a tick', async () => {
    const { sb } = loop;
    await kubeRequest(sb.kc, objectPath(Resources.horizontalPodAutoscaler, sb.namespace, 'an-a-hpa'), {
      method: 'PATCH',
      body: { metadata: { annotations: { 'llm-d.ai/managed': 'false' } } },
      contentType: 'application/merge-patch+json',
    });
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'an-a-hpa' }, undefined, AT_ONCE_MS);
    const record = await readCycleRecord(sb.redis, sb.prefix);
    expect(record?.decisions.map((d) => d.key)).not.toContain(annotatedVariantKey(sb.namespace, 'an-a-hpa', 'HorizontalPodAutoscaler'));
  });
});
