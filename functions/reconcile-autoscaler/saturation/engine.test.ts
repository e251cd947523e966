import { describe, expect, it } from 'vitest';
import { parseSaturationConfig, type SaturationConfigSet } from '../config/saturation-config.js';
import { selectActiveVariants } from './active-variants.js';
import { parseVariantDecision } from './decision.js';
import { decideCycle, type CycleOptions, type GroupInputs } from './engine.js';
import { candidate, deployment, va } from './test-helpers.js';
import type { ReplicaMetrics } from './types.js';

const NOW = new Date('2026-01-29T12:00:00.123Z');
const KEY = 'meta/llama-3.1-8b|llm';

function options(over: Partial<CycleOptions> = {}, saturation?: SaturationConfigSet): CycleOptions {
  return {
    now: NOW,
    saturation: saturation ?? parseSaturationConfig({ default: '{}' }).config,
    scaleToZero: () => ({ enabled: false, retentionMs: 600_000 }),
    ...over,
  };
}

const pods = (variantName: string, ...values: [number, number][]): ReplicaMetrics[] =>
  values.map(([kv, q], i) => ({ podName: `${variantName}-${i}`, variantName, kvCacheUsage: kv, queueLength: q }));

function twoVariants(cheapReplicas = 2, dearReplicas = 2, desired: { cheap?: number; dear?: number } = {}) {
  return selectActiveVariants([
    candidate(va('cheap', { cost: '30', accelerator: 'L40S', ...(desired.cheap !== undefined ? { desired: desired.cheap } : {}) }), deployment('cheap', cheapReplicas)),
    candidate(va('dear', { cost: '50', accelerator: 'H100', ...(desired.dear !== undefined ? { desired: desired.dear } : {}) }), deployment('dear', dearReplicas)),
  ]).groups;
}

describe('decideCycle', () => {
  it('scales the cheaper variant up by one under pressure and writes a complete decision', () => {
    const groups = twoVariants();
    const inputs: Record<string, GroupInputs> = { [KEY]: { metrics: { status: 'ok', replicas: [...pods('cheap', [0.75, 2], [0.76, 2]), ...pods('dear', [0.74, 2], [0.77, 2])] } } };
    const r = decideCycle(groups, inputs, options());
    expect(r.limiter).toBe('disabled');
    const [cheap, dear] = r.decisions;
    expect(cheap).toMatchObject({ key: 'llm/cheap', desiredReplicas: 3, action: 'scale-up', source: 'saturation', accelerator: 'L40S', cost: 30, currentReplicas: 2, decidedAt: '2026-01-29T12:00:00Z', limited: false });
    expect(cheap?.reason).toMatch(/^average spare KV cache 0\.045 < 0\.100: adding a replica to the cheapest variant cheap \(cost 30\)$/);
    expect(cheap?.metricsAvailable).toEqual({ type: 'MetricsAvailable', status: 'True', reason: 'MetricsFound', message: 'Saturation metrics from 2 pod(s)' });
    expect(cheap?.optimizationReady).toMatchObject({ type: 'OptimizationReady', status: 'True', reason: 'OptimizationSucceeded' });
    expect(dear).toMatchObject({ desiredReplicas: 2, action: 'no-change', reason: "no change here: the model's scale-up goes to variant cheap" });
    for (const d of r.decisions) expect(parseVariantDecision(JSON.parse(JSON.stringify(d))).ok).toBe(true);
  });

  it('includes no-change decisions of a model in transition: desired 5 vs current 3 is a scale-up', () => {
    const groups = twoVariants(3, 2, { cheap: 5 });
    const r = decideCycle(groups, { [KEY]: { metrics: { status: 'ok', replicas: [...pods('cheap', [0.1, 0], [0.1, 0], [0.1, 0]), ...pods('dear', [0.1, 0], [0.1, 0])] } } }, options());
    expect(r.decisions.map((d) => [d.variantName, d.desiredReplicas, d.action, d.source])).toEqual([
      ['cheap', 5, 'scale-up', 'transition'],
      ['dear', 2, 'no-change', 'transition'],
    ]);
    expect(r.models[0]?.inTransition).toBe(true);
  });

  it('only stale metrics (older than the fresh threshold): MetricsStale naming the limits, last decision held', () => {
    const groups = twoVariants(2, 1, { dear: 3 });
    const stale = [{ podName: 'cheap-0', variantName: 'cheap' }];
    const r = decideCycle(groups, { [KEY]: { metrics: { status: 'ok', replicas: [], stale } } }, options({ freshness: { freshThresholdMs: 5_000, unavailableThresholdMs: 20_000 } }));
    expect(r.decisions.map((d) => [d.variantName, d.desiredReplicas, d.source])).toEqual([
      ['cheap', 2, 'stale-metrics'],
      ['dear', 3, 'stale-metrics'],
    ]);
    expect(r.decisions[0]?.metricsAvailable).toMatchObject({ status: 'False', reason: 'MetricsStale' });
    expect(r.decisions[0]?.metricsAvailable.message).toContain('in the last 5s (PROMETHEUS_METRICS_CACHE_FRESH_THRESHOLD)');
    expect(r.decisions[0]?.metricsAvailable.message).toContain('less than 20s old');
    expect(r.decisions[0]?.optimizationReady).toMatchObject({ status: 'False', reason: 'MetricsUnavailable' });
  });

  it('one variant stale, the other fresh: that variant says MetricsStale and the model holds (in transition)', () => {
    const groups = twoVariants(2, 1);
    const r = decideCycle(groups, { [KEY]: { metrics: { status: 'ok', replicas: pods('cheap', [0.5, 0], [0.5, 0]), stale: [{ podName: 'dear-0', variantName: 'dear' }] } } }, options());
    expect(r.decisions.map((d) => [d.variantName, d.desiredReplicas, d.metricsAvailable.reason])).toEqual([
      ['cheap', 2, 'MetricsFound'],
      ['dear', 1, 'MetricsStale'],
    ]);
    expect(r.models[0]?.inTransition).toBe(true);
  });

  it('without Prometheus data (and default: {}) holds the current size and says metrics are missing', () => {
    const groups = twoVariants(2, 1, { dear: 3 });
    const r = decideCycle(groups, { [KEY]: { metrics: { status: 'ok', replicas: [] } } }, options());
    expect(r.decisions.map((d) => [d.variantName, d.desiredReplicas, d.source])).toEqual([
      ['cheap', 2, 'no-metrics'],
      ['dear', 3, 'no-metrics'],
    ]);
    expect(r.decisions[0]?.metricsAvailable).toMatchObject({ status: 'False', reason: 'MetricsMissing' });
    expect(r.decisions[0]?.optimizationReady).toMatchObject({ status: 'False', reason: 'MetricsUnavailable' });
  });

  it('falls back to the last decision or current size when Prometheus fails (safety net)', () => {
    const groups = twoVariants(2, 2, { cheap: 4 });
    const r = decideCycle(groups, { [KEY]: { metrics: { status: 'error', message: 'connection refused' } } }, options());
    expect(r.decisions.map((d) => [d.variantName, d.desiredReplicas, d.source])).toEqual([
      ['cheap', 4, 'prometheus-error'],
      ['dear', 2, 'prometheus-error'],
    ]);
    expect(r.decisions[0]?.metricsAvailable).toEqual({ type: 'MetricsAvailable', status: 'False', reason: 'PrometheusError', message: 'Prometheus query failed: connection refused' });
    // a group the handler forgot to collect is treated the same way
    expect(decideCycle(groups, {}, options()).decisions[0]?.source).toBe('prometheus-error');
  });

  it('applies a per-model override', () => {
    const replicas = [...pods('cheap', [0.65, 0], [0.65, 0]), ...pods('dear', [0.65, 0], [0.65, 0])];
    const plain = decideCycle(twoVariants(), { [KEY]: { metrics: { status: 'ok', replicas } } }, options());
    expect(plain.decisions.map((d) => d.desiredReplicas)).toEqual([2, 2]);
    const withOverride = parseSaturationConfig({ default: '{}', llama: 'model_id: meta/llama-3.1-8b\nnamespace: llm\nkvCacheThreshold: 0.72' }).config;
    const tight = decideCycle(twoVariants(), { [KEY]: { metrics: { status: 'ok', replicas } } }, options({}, withOverride));
    expect(tight.models[0]?.overrideKey).toBe('llama');
    expect(tight.decisions.map((d) => d.desiredReplicas)).toEqual([3, 2]);
  });

  it('marks a variant without reporting pods as missing metrics while the model holds', () => {
    const r = decideCycle(twoVariants(), { [KEY]: { metrics: { status: 'ok', replicas: pods('cheap', [0.9, 9], [0.9, 9]) } } }, options());
    expect(r.decisions.map((d) => [d.variantName, d.desiredReplicas, d.metricsAvailable.reason])).toEqual([
      ['cheap', 2, 'MetricsFound'],
      ['dear', 2, 'MetricsMissing'],
    ]);
  });

  it('scales an idle model to zero when enabled and no requests came, keeps one replica otherwise', () => {
    const groups = selectActiveVariants([candidate(va('solo', { accelerator: 'A100' }), deployment('solo', 1))]).groups;
    const inputs = (count: number): Record<string, GroupInputs> => ({ [KEY]: { metrics: { status: 'ok', replicas: pods('solo', [0, 0]) }, requestCount: { status: 'ok', count } } });
    const on = options({ scaleToZero: () => ({ enabled: true, retentionMs: 600_000 }) });
    expect(decideCycle(groups, inputs(0), on).decisions[0]).toMatchObject({ desiredReplicas: 0, source: 'scale-to-zero', action: 'scale-down' });
    expect(decideCycle(groups, inputs(3), on).decisions[0]).toMatchObject({ desiredReplicas: 1, source: 'saturation' });
    expect(decideCycle(groups, inputs(0), options()).decisions[0]).toMatchObject({ desiredReplicas: 1 });
  });

  it('caps scale-ups by free GPUs when the limiter is enabled', () => {
    const sat = parseSaturationConfig({ default: 'enableLimiter: true' }).config;
    const replicas = [...pods('cheap', [0.79, 4], [0.79, 4]), ...pods('dear', [0.79, 4], [0.79, 4])];
    const full = decideCycle(twoVariants(), { [KEY]: { metrics: { status: 'ok', replicas } } }, options({ gpuCapacityByType: { L40S: 2, H100: 8 } }, sat));
    expect(full.limiter).toBe('applied');
    expect(full.decisions[0]).toMatchObject({ variantName: 'cheap', desiredReplicas: 2, action: 'no-change', limited: true });
    expect(full.decisions[0]?.reason).toMatch(/limited to 2 replica\(s\) by free L40S GPUs$/);
    const room = decideCycle(twoVariants(), { [KEY]: { metrics: { status: 'ok', replicas } } }, options({ gpuCapacityByType: { L40S: 4 } }, sat));
    expect(room.decisions[0]).toMatchObject({ desiredReplicas: 3, limited: false });
    const blind = decideCycle(twoVariants(), { [KEY]: { metrics: { status: 'ok', replicas } } }, options({}, sat));
    expect(blind.limiter).toBe('no-inventory');
    expect(blind.decisions[0]?.desiredReplicas).toBe(3);
  });
});

describe('issue 14: decisions for the status and the loop', () => {
  it('scenario 9: with no metrics, scale-to-zero still applies when the model had no requests', () => {
    const groups = twoVariants(2, 1);
    const inputs: Record<string, GroupInputs> = { [KEY]: { metrics: { status: 'ok', replicas: [] }, requestCount: { status: 'ok', count: 0 } } };
    const r = decideCycle(groups, inputs, options({ scaleToZero: () => ({ enabled: true, retentionMs: 600_000 }) }));
    expect(r.decisions.map((d) => [d.variantName, d.desiredReplicas, d.source])).toEqual([
      ['cheap', 0, 'scale-to-zero'],
      ['dear', 0, 'scale-to-zero'],
    ]);
    expect(r.decisions[0]?.metricsAvailable.reason).toBe('MetricsMissing');
    // Requests seen, or the count unknown: hold.
    const busy = decideCycle(groups, { [KEY]: { metrics: { status: 'ok', replicas: [] }, requestCount: { status: 'ok', count: 3 } } }, options({ scaleToZero: () => ({ enabled: true, retentionMs: 600_000 }) }));
    expect(busy.decisions.map((d) => [d.desiredReplicas, d.source])).toEqual([
      [2, 'no-metrics'],
      [1, 'no-metrics'],
    ]);
  });

  it('scenario 7: a refused query is told apart from a failed one', () => {
    const r = decideCycle(twoVariants(), { [KEY]: { metrics: { status: 'error', message: 'answered 401 Unauthorized', auth: true } } }, options());
    expect(r.decisions[0]).toMatchObject({ source: 'prometheus-auth', desiredReplicas: 2 });
    expect(r.decisions[0]?.metricsAvailable).toMatchObject({ status: 'False', reason: 'PrometheusError', message: 'Prometheus refused the credentials: answered 401 Unauthorized' });
  });

  it('scenario 2: decisions carry the Deployment uid they were made for, and scenario 3: a validity limit', () => {
    const r = decideCycle(twoVariants(), { [KEY]: { metrics: { status: 'ok', replicas: [...pods('cheap', [0.5, 0], [0.5, 0]), ...pods('dear', [0.5, 0], [0.5, 0])] } } }, options({ decisionTtlMs: 180_000 }));
    expect(r.decisions[0]).toMatchObject({ targetUid: 'cheap-uid', validUntil: '2026-01-29T12:03:00Z' });
  });

  it('scenario 8: the status message of a steady decision has no live numbers, so load noise rewrites nothing', () => {
    const at = (kv: number) =>
      decideCycle(twoVariants(), { [KEY]: { metrics: { status: 'ok', replicas: [...pods('cheap', [kv, 0], [kv, 0]), ...pods('dear', [kv, 0], [kv, 0])] } } }, options()).decisions[0];
    // Too loaded for a safe scale-down, not enough for a scale-up: "within bounds", with the spares in the reason.
    const a = at(0.65);
    const b = at(0.66);
    expect(a?.reason).not.toBe(b?.reason); // the record and the logs keep the numbers
    expect(a?.optimizationReady.message).toBe(b?.optimizationReady.message);
    expect(a?.optimizationReady.message).not.toMatch(/\d\.\d/);
  });
});

