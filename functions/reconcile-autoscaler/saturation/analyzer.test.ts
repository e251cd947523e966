import { describe, expect, it } from 'vitest';
import { BUILT_IN_SATURATION_THRESHOLDS as T } from '../config/saturation-config.js';
import { analyzeModelSaturation, isSaturated } from './analyzer.js';
import type { ReplicaMetrics } from './types.js';

// WVA's analyzer cases (reference §6), thresholds kvT 0.80, qT 5, kvTrig 0.10, qTrig 3.
const pods = (...values: [number, number][]): ReplicaMetrics[] =>
  values.map(([kv, q], i) => ({ podName: `pod-${i + 1}`, variantName: 'v1', kvCacheUsage: kv, queueLength: q }));

describe('analyzeModelSaturation', () => {
  it('uses the upstream thresholds', () => {
    expect(T).toMatchObject({ kvCacheThreshold: 0.8, queueLengthThreshold: 5, kvSpareTrigger: 0.1, queueSpareTrigger: 3 });
  });

  it('(0.75,2),(0.76,2): scale-up on KV, average spare KV 0.045', () => {
    const a = analyzeModelSaturation(pods([0.75, 2], [0.76, 2]), T);
    expect(a.shouldScaleUp).toBe(true);
    expect(a.avgSpareKv).toBeCloseTo(0.045, 10);
    expect(a.avgSpareQueue).toBe(3);
    expect(a.scaleUpReason).toBe('average spare KV cache 0.045 < 0.100');
  });

  it('(0.50,3),(0.50,3): scale-up on queue (spare 2 < 3)', () => {
    const a = analyzeModelSaturation(pods([0.5, 3], [0.5, 3]), T);
    expect(a.shouldScaleUp).toBe(true);
    expect(a.avgSpareQueue).toBe(2);
    expect(a.scaleUpReason).toBe('average spare queue 2.0 < 3.0');
  });

  it('(0.50,1),(0.50,1): no scale-up', () => {
    const a = analyzeModelSaturation(pods([0.5, 1], [0.5, 1]), T);
    expect(a.shouldScaleUp).toBe(false);
    expect(a.scaleUpReason).toBeUndefined();
  });

  it('(0.20,1),(0.30,1),(0.25,1): scale-down safe', () => {
    const a = analyzeModelSaturation(pods([0.2, 1], [0.3, 1], [0.25, 1]), T);
    expect(a.shouldScaleUp).toBe(false);
    expect(a.scaleDownSafe).toBe(true);
    // load 0.25 KV and 1 queue, ×3/2 after removal → spare 0.425 and 3.5
    expect(a.scaleDownReason).toBe('with one replica fewer: spare KV cache 0.425 (trigger 0.100), spare queue 3.5 (trigger 3.0)');
  });

  it('(0.70,2),(0.75,2): scale-down unsafe', () => {
    expect(analyzeModelSaturation(pods([0.7, 2], [0.75, 2]), T).scaleDownSafe).toBe(false);
  });

  it('single (0.50,2): scale-down unsafe with fewer than 2 non-saturated replicas', () => {
    const a = analyzeModelSaturation(pods([0.5, 2]), T);
    expect(a.scaleDownSafe).toBe(false);
    expect(a.scaleDownReason).toBe('only 1 non-saturated replica(s); need 2');
  });

  it('(0.85,2),(0.50,6),(0.60,2): pod-1 saturated on KV, pod-2 on queue, one non-saturated', () => {
    const a = analyzeModelSaturation(pods([0.85, 2], [0.5, 6], [0.6, 2]), T);
    expect(a.totalReplicas).toBe(3);
    expect(a.nonSaturatedCount).toBe(1);
    expect(a.variants[0]?.saturatedReplicas).toEqual(['pod-1', 'pod-2']);
    expect(isSaturated({ kvCacheUsage: 0.85, queueLength: 2 }, T)).toBe(true);
    expect(isSaturated({ kvCacheUsage: 0.5, queueLength: 6 }, T)).toBe(true);
    expect(isSaturated({ kvCacheUsage: 0.8, queueLength: 0 }, T)).toBe(true);
    expect(isSaturated({ kvCacheUsage: 0.79, queueLength: 4 }, T)).toBe(false);
    expect(a.avgSpareKv).toBeCloseTo(0.2, 10);
    expect(a.avgSpareQueue).toBe(3);
  });

  it('all saturated: average spare 0, scale-up, scale-down unsafe', () => {
    const a = analyzeModelSaturation(pods([0.85, 2], [0.5, 6], [0.9, 7]), T);
    expect(a.nonSaturatedCount).toBe(0);
    expect(a.avgSpareKv).toBe(0);
    expect(a.avgSpareQueue).toBe(0);
    expect(a.shouldScaleUp).toBe(true);
    expect(a.scaleDownSafe).toBe(false);
  });

  it('no metrics: 0 replicas, neither scale-up nor scale-down', () => {
    const a = analyzeModelSaturation([], T);
    expect(a.totalReplicas).toBe(0);
    expect(a.shouldScaleUp).toBe(false);
    expect(a.scaleDownSafe).toBe(false);
  });

  it('4 pods across 2 variants: 4 total, 4 non-saturated, 2 variant analyses weighted by count', () => {
    const replicas: ReplicaMetrics[] = [
      { podName: 'v1-pod-1', variantName: 'variant-1', kvCacheUsage: 0.7, queueLength: 2 },
      { podName: 'v1-pod-2', variantName: 'variant-1', kvCacheUsage: 0.75, queueLength: 3 },
      { podName: 'v2-pod-1', variantName: 'variant-2', kvCacheUsage: 0.6, queueLength: 1 },
      { podName: 'v2-pod-2', variantName: 'variant-2', kvCacheUsage: 0.65, queueLength: 2 },
    ];
    const a = analyzeModelSaturation(replicas, T, [
      { variantName: 'variant-1', cost: 20, accelerator: 'H100' },
      { variantName: 'variant-2', cost: 5, accelerator: 'A100' },
    ]);
    expect(a.totalReplicas).toBe(4);
    expect(a.nonSaturatedCount).toBe(4);
    expect(a.variants.map((v) => [v.variantName, v.replicaCount, v.cost, v.accelerator])).toEqual([
      ['variant-1', 2, 20, 'H100'],
      ['variant-2', 2, 5, 'A100'],
    ]);
    expect(a.variants[0]?.avgSpareKv).toBeCloseTo(0.075, 10);
    expect(a.variants[1]?.avgSpareKv).toBeCloseTo(0.175, 10);
    expect(a.avgSpareKv).toBeCloseTo(0.125, 10);
    expect(a.variants[0]?.maxKvCacheUsage).toBe(0.75);
    expect(a.variants[0]?.maxQueueLength).toBe(3);
  });

  it('lists a variant without pods with 0 replicas, and counts unknown variants at the default cost', () => {
    const a = analyzeModelSaturation([{ podName: 'p', variantName: 'stray', kvCacheUsage: 0.1, queueLength: 0 }], T, [{ variantName: 'quiet', cost: 3, accelerator: 'L4' }]);
    expect(a.variants.map((v) => [v.variantName, v.replicaCount, v.cost])).toEqual([
      ['quiet', 0, 3],
      ['stray', 1, 10],
    ]);
  });
});
