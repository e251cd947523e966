import { describe, expect, it } from 'vitest';
import { parseSaturationConfig, saturationThresholdsFor } from '../config/saturation-config.js';
import { analyzeV2, hasCacheConfig, type V2Replica } from './v2.js';

// upstream's analyzer_test.go fixtures: 16000 KV tokens per replica (1000 blocks of 16), kvCacheThreshold 0.8,
// queueLengthThreshold 5; scaleUpThreshold 0.85 and scaleDownBoundary 0.70 (upstream's defaults).
const T = { kvCacheThreshold: 0.8, queueLengthThreshold: 5, scaleUpThreshold: 0.85, scaleDownBoundary: 0.7 };
const pod = (podName: string, variantName: string, tokensInUse: number, queueLength: number): V2Replica => ({ podName, variantName, kvCacheUsage: tokensInUse / 16000, queueLength, numGpuBlocks: 1000, blockSize: 16 });
const variant = (variantName: string, currentReplicas: number, cost = 10, pendingReplicas = 0) => ({ variantName, cost, currentReplicas, pendingReplicas });

describe('Saturation V2: per-replica capacity (upstream analyzer_test.go "k1/k2 interaction")', () => {
  it('k1 (memory-bound, 16000 × 0.8 = 12800) while the queue is below its threshold', () => {
    expect(analyzeV2([pod('p', 'a', 5000, 0)], [variant('a', 1)], T).variants[0]?.perReplicaCapacity).toBe(12800);
  });
  it('k2 = the tokens in use when the queue is saturated (8000 < 12800)', () => {
    expect(analyzeV2([pod('p', 'a', 8000, 6)], [variant('a', 1)], T).variants[0]?.perReplicaCapacity).toBe(8000);
  });
  it('compute-bound with a saturated queue and little KV in use (4000)', () => {
    expect(analyzeV2([pod('p', 'a', 4000, 10)], [variant('a', 1)], T).variants[0]?.perReplicaCapacity).toBe(4000);
  });
  it('pending replicas count in the anticipated supply, not in the supply; no scale-up then (upstream "Pending replicas")', () => {
    const r = analyzeV2([pod('p', 'a', 10000, 0)], [variant('a', 2, 10, 1)], T);
    expect(r.totalSupply).toBe(12800);
    expect(r.anticipatedSupply).toBe(25600);
    expect(r.requiredCapacity).toBe(0);
    expect(r.targets).toEqual({ a: 2 });
  });
  it('without vllm:cache_config_info there is nothing to measure capacity with', () => {
    expect(hasCacheConfig([{ podName: 'p', variantName: 'a', kvCacheUsage: 0.5, queueLength: 0 }])).toBe(false);
    expect(analyzeV2([{ podName: 'p', variantName: 'a', kvCacheUsage: 0.5, queueLength: 0 }], [variant('a', 1)], T).variants[0]?.perReplicaCapacity).toBe(0);
  });
});

describe('Saturation V2: required and spare capacity, and the cost-aware step', () => {
  it('required = demand / scaleUpThreshold − anticipated supply: 11200 / 0.85 − 12800 ≈ 376 tokens → +1 replica', () => {
    const r = analyzeV2([pod('p', 'a', 11200, 0)], [variant('a', 1)], T);
    expect(r.requiredCapacity).toBeCloseTo(11200 / 0.85 - 12800, 6);
    expect(r.targets).toEqual({ a: 2 });
    expect(r.step).toMatchObject({ kind: 'scale-up', variantName: 'a', replicas: 1 });
  });
  it('the scale-up goes to the most cost-efficient variant (cost per token of capacity), skipping one with replicas starting', () => {
    const replicas = [pod('a1', 'a', 15000, 0), pod('b1', 'b', 15000, 0), pod('c1', 'c', 15000, 6)];
    // a: 10/12800; b: 8/12800 (cheaper), but b has a replica starting; c: 5/15000 (k2) is cheapest per token.
    const r = analyzeV2(replicas, [variant('a', 1, 10), variant('b', 2, 8, 1), variant('c', 1, 5)], T);
    expect(r.step).toMatchObject({ kind: 'scale-up', variantName: 'c' });
    expect(r.targets['b']).toBe(2);
  });
  it('spare = supply − demand / scaleDownBoundary; ⌊spare / capacity⌋ removed from the most expensive first, the cheapest kept at 1', () => {
    // supply 4 × 12800 = 51200, demand 4 × 1000: spare = 51200 − 4000 / 0.7 ≈ 45486 → 3 replicas' worth.
    const r = analyzeV2([pod('a1', 'a', 1000, 0), pod('a2', 'a', 1000, 0), pod('b1', 'b', 1000, 0), pod('b2', 'b', 1000, 0)], [variant('a', 2, 20), variant('b', 2, 5)], T);
    expect(r.spareCapacity).toBeCloseTo(51200 - 4000 / 0.7, 6);
    expect(r.targets).toEqual({ a: 0, b: 1 });
    expect(r.step).toMatchObject({ kind: 'scale-down', replicas: 3 });
  });
  it('two replicas at 30 % KV: V2 keeps both (spare 11886 < one replica of 12800), where V1 would remove one', () => {
    const r = analyzeV2([pod('a1', 'a', 4800, 0), pod('a2', 'a', 4800, 0)], [variant('a', 2)], T);
    expect(r.targets).toEqual({ a: 2 });
    expect(r.step.kind).toBe('none');
  });
});

describe('selecting V2 with the ConfigMap keys upstream uses', () => {
  it('analyzerName: saturation selects V2 with upstream defaults 0.85 / 0.70; an override may select V1 for one model; a bad name is rejected', () => {
    const { config, issues } = parseSaturationConfig({
      default: 'analyzerName: saturation\n',
      'v1-model': 'model_id: m1\nnamespace: ns\nanalyzerName: ""\n',
      bad: 'model_id: m2\nnamespace: ns\nanalyzerName: queueing\n',
    });
    expect(config.default).toMatchObject({ analyzerName: 'saturation', scaleUpThreshold: 0.85, scaleDownBoundary: 0.7 });
    expect(saturationThresholdsFor(config, 'm1', 'ns').thresholds.analyzerName).toBe('');
    expect(issues.map((i) => [i.key, i.message])).toEqual([['bad', 'analyzerName must be "saturation" (Saturation V2) or empty (V1), not "queueing"']]);
    expect(parseSaturationConfig({ default: 'scaleUpThreshold: 0.9\nscaleDownBoundary: 0.5\n' }).config.default).toMatchObject({ analyzerName: '', scaleUpThreshold: 0.9, scaleDownBoundary: 0.5 });
  });
});
