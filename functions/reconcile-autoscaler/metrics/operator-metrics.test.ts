import { describe, expect, it } from 'vitest';
import { cycleObservations } from './cycle-observations.js';
import { categorizePrometheusError, counterField, histogramIncrements, mergeIncrements } from './operator-metrics.js';
import type { ModelGroup } from '../saturation/active-variants.js';
import type { VariantDecision } from '../saturation/decision.js';

describe('operator metrics', () => {
  it('a histogram observation lands in every bucket at or above it, +Inf, count, and the sum in µs', () => {
    const incs = histogramIncrements('wva_optimization_duration_seconds', { status: 'success' }, 0.3);
    const fields = incs.map((i) => JSON.parse(i.field) as [string, Record<string, string>]);
    expect(fields.filter(([n]) => n.endsWith('_bucket')).map(([, l]) => l['le'])).toEqual(['0.5', '1', '2.5', '5', '10', '+Inf']);
    expect(incs.find((i) => i.field === counterField('wva_optimization_duration_seconds_sum_us', { status: 'success' }))?.by).toBe(300_000);
    expect(incs.find((i) => i.field === counterField('wva_optimization_duration_seconds_count', { status: 'success' }))?.by).toBe(1);
  });

  it('labels are sorted in a field, so the same series is one field; merged increments add up', () => {
    expect(counterField('x', { b: '1', a: '2' })).toBe(counterField('x', { a: '2', b: '1' }));
    expect(mergeIncrements([{ field: 'f', by: 1 }, { field: 'f', by: 2 }, { field: 'g', by: 1 }])).toEqual([{ field: 'f', by: 3 }, { field: 'g', by: 1 }]);
  });

  it("Prometheus errors fall into upstream's bounded categories", () => {
    expect(categorizePrometheusError('cannot reach Prometheus at http://x: request failed, reason: connect ECONNREFUSED 127.0.0.1:1')).toBe('connection_refused');
    expect(categorizePrometheusError('cannot reach Prometheus at http://x: no answer within 10000 ms')).toBe('timeout');
    expect(categorizePrometheusError('getaddrinfo ENOTFOUND prom')).toBe('dns_error');
    expect(categorizePrometheusError('bad_data: parse error at char 3')).toBe('parse_error');
    expect(categorizePrometheusError('something else')).toBe('unknown');
  });
});

const variant = (name: string) => ({
  key: `ns/${name}-va`,
  vaName: `${name}-va`,
  namespace: 'ns',
  modelID: 'm',
  variantName: name,
  cost: 10,
  accelerator: 'A100',
  acceleratorSource: 'label' as const,
  currentReplicas: 2,
  readyReplicas: 2,
  pendingReplicas: 0,
  targetUid: `uid-${name}`,
  gpusPerReplica: 1,
});

const decision = (name: string, over: Partial<VariantDecision>): VariantDecision => ({
  key: `ns/${name}-va`,
  vaName: `${name}-va`,
  namespace: 'ns',
  modelID: 'm',
  variantName: name,
  accelerator: 'A100',
  cost: 10,
  currentReplicas: 2,
  desiredReplicas: 2,
  action: 'no-change',
  source: 'saturation',
  reason: '',
  limited: false,
  decidedAt: '2026-01-01T00:00:00Z',
  metricsAvailable: { type: 'MetricsAvailable', status: 'True', reason: 'MetricsFound', message: '' },
  optimizationReady: { type: 'OptimizationReady', status: 'True', reason: 'OptimizationSucceeded', message: '' },
  ...over,
});

describe('cycleObservations', () => {
  const group: ModelGroup = { key: 'm|ns', modelID: 'm', namespace: 'ns', variants: [variant('a'), variant('b')] };
  const base = {
    groups: [group],
    config: { analyzerName: '', limiterEnabled: true, scaleToZeroEnabled: false, kvSpareTrigger: 0.1, queueSpareTrigger: 3, intervalSeconds: 60 },
    variantNameOf: (vaKey: string) => vaKey.slice(vaKey.indexOf('/') + 1),
    pendingErrors: 0,
    podVariantByNs: new Map([['ns', new Map([['a-1', 'a'], ['a-2', 'a'], ['b-1', 'b'], ['b-2', 'b']])]]),
  };

  it('fresh, stale and missing pods per variant; utilization, spare and the binary scale-up signal from the analysis; limited and enforced decisions counted', () => {
    const { gauges, increments } = cycleObservations({
      ...base,
      inputs: {
        'm|ns': {
          metrics: { status: 'ok', replicas: [{ podName: 'a-1', variantName: 'a', kvCacheUsage: 0.4, queueLength: 0 }, { podName: 'a-2', variantName: 'a', kvCacheUsage: 0.6, queueLength: 0 }], stale: [{ podName: 'b-1', variantName: 'b' }] },
          collection: { seconds: 0.02, queryTypes: ['kv_cache', 'queue_length'] },
        },
      },
      models: [{ key: 'm|ns', thresholds: { kvCacheThreshold: 0.8, queueLengthThreshold: 5, kvSpareTrigger: 0.1, queueSpareTrigger: 3, enableLimiter: true, analyzerName: '', scaleUpThreshold: 0.85, scaleDownBoundary: 0.7 }, inTransition: false, analysis: { totalReplicas: 2, nonSaturatedCount: 2, avgSpareKv: 0.3, avgSpareQueue: 5, shouldScaleUp: true, scaleDownSafe: false, variants: [] } }],
      decisions: [decision('a', { limited: true }), decision('b', { source: 'minimum-replica' })],
    });
    expect(gauges.modelsProcessed).toBe(1);
    expect(gauges.podsDiscovered).toEqual({ ns: 2 });
    expect(gauges.variants.map((v) => [v.targetName, v.freshness, v.up])).toEqual([
      ['a', { fresh: 2, stale: 0, missing: 0 }, true],
      ['b', { fresh: 0, stale: 1, missing: 1 }, false],
    ]);
    expect(gauges.variants[0]?.saturation).toEqual({ utilization: 0.5, spare: 0.3, required: 1, unit: 'binary' });
    expect(gauges.variants[1]?.saturation).toBeUndefined();
    const by = Object.fromEntries(increments.map((i) => [i.field, i.by]));
    expect(by[counterField('wva_decisions_limited_total', { variant_name: 'a-va', namespace: 'ns', limiter_name: 'gpu-limiter' })]).toBe(1);
    expect(by[counterField('wva_enforcer_modifications_total', { policy_type: 'minimum_replicas' })]).toBe(1);
    expect(by[counterField('wva_metrics_collection_duration_seconds_count', { query_type: 'kv_cache' })]).toBe(1);
  });

  it('a failed Prometheus: every listed pod unavailable, a collector error and a collection error per query type', () => {
    const { gauges, increments } = cycleObservations({
      ...base,
      inputs: { 'm|ns': { metrics: { status: 'error', message: 'connect ECONNREFUSED' }, collection: { seconds: 0.001, queryTypes: ['kv_cache', 'queue_length'], errorReason: 'connection_refused' } } },
      models: [],
      decisions: [decision('a', { source: 'prometheus-error' })],
    });
    expect(gauges.variants.map((v) => v.freshness)).toEqual([{ unavailable: 2 }, { unavailable: 2 }]);
    const by = Object.fromEntries(increments.map((i) => [i.field, i.by]));
    expect(by[counterField('wva_errors_total', { component: 'collector', error_type: 'Failed to collect replica metrics' })]).toBe(1);
    expect(by[counterField('wva_metrics_collection_errors_total', { query_type: 'queue_length', reason: 'connection_refused' })]).toBe(1);
  });
});
