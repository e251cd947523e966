import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCycleRecord } from '../../functions/reconcile-autoscaler/state.js';
import { waitFor } from '../harness/sandbox.js';
import { createDeployment, createVA, loadPods, upsertConfigMap } from './autoscaler-helpers.js';
import { SAT, startLoop, waitForScraped, type Loop } from './autoscaler-loop.js';

/**
 * One replica at 70 % of a 16000-token KV cache (1000 blocks of 16, as vllm:cache_config_info says), queue empty.
 * V1 (seed 003's analyzer): spare KV 0.8 − 0.7 = 0.1 is not below kvSpareTrigger 0.1, no scale-up: desired 1.
 * V2: 11200 tokens in use, capacity 16000 × 0.8 = 12800 per replica: required = 11200 / 0.85 − 12800 ≈ 376 > 0:
 * one more replica, desired 2.
 */
const LOAD = { kvCacheUsage: 0.7, waiting: 0, cacheConfig: { numGpuBlocks: 1000, blockSize: 16 } };

// Issue 31 item 6: current WVA's default analyzer, Saturation V2 (token capacity from vllm:cache_config_info,
// scaleUpThreshold, scaleDownBoundary), selected by `analyzerName: saturation` in the saturation ConfigMap.
// Before, Ripple accepted the keys and ignored them: the same load was decided by V1 (desired 1).
describe('reconcile-autoscaler: Saturation V2 decides from token capacity with real Prometheus series (issue 31 item 6)', () => {
  let loop: Loop;

  beforeAll(async () => {
    loop = await startLoop('as-satv2');
  });
  afterAll(async () => {
    await loop?.stop();
  });

  it('analyzerName: saturation → V2 scales up where V1 would not; a per-model override keeps V1 for another model', async () => {
    const { sb, emitter } = loop;
    await upsertConfigMap(sb, SAT, {
      default: 'kvCacheThreshold: 0.80\nqueueLengthThreshold: 5\nkvSpareTrigger: 0.1\nqueueSpareTrigger: 3\nanalyzerName: saturation\n',
      'v1-model': `model_id: v1-model\nnamespace: ${sb.namespace}\nanalyzerName: ""\n`,
    });
    await createDeployment(sb, 'v2a', 1);
    await createDeployment(sb, 'v1a', 1);
    await createVA(sb, 'v2a', { model: 'v2-model' });
    await createVA(sb, 'v1a', { model: 'v1-model' });
    await loadPods(sb, emitter, 'v2a', 'v2-model', 1, LOAD);
    await loadPods(sb, emitter, 'v1a', 'v1-model', 1, LOAD);
    await loop.waitForVllmSeries('v2-model', 1);
    await loop.waitForVllmSeries('v1-model', 1);
    // The info metric is scraped too (labels only, no model_name, as vLLM exports it).
    const info = await loop.query(`vllm:cache_config_info{namespace="${sb.namespace}"}`);
    expect(info.map((s) => s.metric['num_gpu_blocks'])).toEqual(['1000', '1000']);

    // A cycle the VAs asked for may have run before the pods reported: run cycles until both are decided from metrics.
    const record = await waitFor('a cycle that saw both pods', 30_000, async () => {
      await loop.cycle();
      const r = await readCycleRecord(sb.redis, sb.prefix);
      return r?.decisions.filter((d) => d.source !== 'no-metrics').length === 2 ? r : undefined;
    });
    const v2 = record?.decisions.find((d) => d.key === `${sb.namespace}/v2a`);
    expect(v2).toMatchObject({ desiredReplicas: 2, source: 'saturation' });
    expect(v2?.reason).toContain('Saturation V2');
    expect(record?.models.find((m) => m.key.startsWith('v2-model'))?.thresholds).toMatchObject({ analyzerName: 'saturation', scaleUpThreshold: 0.85, scaleDownBoundary: 0.7 });
    expect(record?.decisions.find((d) => d.key === `${sb.namespace}/v1a`)).toMatchObject({ desiredReplicas: 1, source: 'saturation' });
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'v2a' }, 2);
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'v1a' }, 1);

    // V2's token gauges, as upstream exports them.
    await waitForScraped(loop, 'wva_kv_cache_tokens_capacity', { variant_name: 'v2a', model_name: 'v2-model' }, 16000);
    expect(await loop.scraped('wva_kv_cache_tokens_used', { variant_name: 'v2a', model_name: 'v2-model' })).toBe(11200);
    expect(await loop.scraped('wva_required_capacity', { variant_name: 'v2a', unit: 'continuous' })).toBeCloseTo(11200 / 0.85 - 12800, 3);
    expect(await loop.scraped('wva_saturation_utilization', { variant_name: 'v2a', accelerator_type: 'A100' })).toBeCloseTo(11200 / 12800, 9);
    expect(await loop.scraped('wva_required_capacity', { variant_name: 'v1a', unit: 'binary' })).toBe(0);
    expect((await loop.query('wva_config_info{analyzer_name="saturation"}')).length).toBe(1);
  });
});
