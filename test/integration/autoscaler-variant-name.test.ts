import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeployment, createVA, loadPods } from './autoscaler-helpers.js';
import { STEADY, startLoop, waitForScraped, type Loop } from './autoscaler-loop.js';

// Issue 31 item 2: `variant_name` carries the VariantAutoscaling's name, as WVA writes it since v0.5.1,
// so a selector copied from a current sample matches. The shapes are WVA's own sample
// (config/samples/hpa-integration.yaml): the VA `vllme-deployment-va` scales the Deployment
// `vllme-deployment`, and the HPA selects `variant_name: vllme-deployment-va`.
describe("reconcile-autoscaler: variant_name is the VariantAutoscaling's name (issue 31 item 2)", () => {
  let loop: Loop;

  beforeAll(async () => {
    loop = await startLoop('as-vname');
  });
  afterAll(async () => {
    await loop?.stop();
  });

  it("a current sample's selector (variant_name = the VA's name) finds the desired replicas in Prometheus; the Deployment's name no longer does", async () => {
    const { sb, emitter } = loop;
    await createDeployment(sb, 'vllme-deployment', 1);
    await createVA(sb, 'vllme-deployment-va', { target: 'vllme-deployment', model: 'vllme-model' });
    await loadPods(sb, emitter, 'vllme-deployment', 'vllme-model', 1, STEADY);
    await loop.waitForVllmSeries('vllme-model', 1);
    await loop.cycle();
    // The sample HPA's External metric selector, and KEDA's query written the same way.
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'vllme-deployment-va' }, 1);
    const keda = await loop.query(`max(wva_desired_replicas{variant_name="vllme-deployment-va",exported_namespace="${sb.namespace}"})`);
    expect(keda.map((r) => r.value)).toEqual([1]);
    expect(await loop.scrapedCount('wva_desired_replicas', { variant_name: 'vllme-deployment' })).toBe(0);
  });
});

describe('reconcile-autoscaler: VARIANT_NAME_LABEL=scale-target keeps WVA v0.5.0 selectors (issue 31 item 2)', () => {
  let loop: Loop;

  beforeAll(async () => {
    loop = await startLoop('as-vname-v050', { env: { VARIANT_NAME_LABEL: 'scale-target' } });
  });
  afterAll(async () => {
    await loop?.stop();
  });

  it("variant_name is the Deployment's name", async () => {
    const { sb, emitter } = loop;
    await createDeployment(sb, 'old-deployment', 1);
    await createVA(sb, 'old-deployment-va', { target: 'old-deployment', model: 'old-model' });
    await loadPods(sb, emitter, 'old-deployment', 'old-model', 1, STEADY);
    await loop.waitForVllmSeries('old-model', 1);
    await loop.cycle();
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'old-deployment' }, 1);
    expect(await loop.scrapedCount('wva_desired_replicas', { variant_name: 'old-deployment-va' })).toBe(0);
  });
});
