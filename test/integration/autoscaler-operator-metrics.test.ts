import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDeployment, createVA, loadPods, upsertConfigMap, waitForCondition } from './autoscaler-helpers.js';
import { CTRL, startLoop, type Loop } from './autoscaler-loop.js';

/** kv 0.5 on every pod: spare KV 0.3 (≥ the 0.1 trigger), no queue: neither scale-up nor a safe scale-down. */
const LOAD = { kvCacheUsage: 0.5, waiting: 0 };

// Issue 31 item 7: the wva_* metrics operators graph on a current WVA (llm-d-autoscaling's
// internal/metrics/metrics.go) under the same names and labels. The same real Prometheus that scrapes the
// vLLM emitter scrapes Ripple's /metrics; the values are read back through its query API after real cycles.
describe('reconcile-autoscaler: the wva_* metrics operators graph (issue 31 item 7)', () => {
  let loop: Loop;
  /** The first sample of an instant query, or undefined. */
  const one = async (promql: string) => (await loop.query(promql))[0]?.value;

  beforeAll(async () => {
    loop = await startLoop('as-opmetrics', { prometheusInConfigMap: true });
  });
  afterAll(async () => {
    await loop?.stop();
  });

  it('after a cycle: duration, models processed, freshness, pods discovered, saturation, configuration', async () => {
    const { sb, emitter } = loop;
    await createDeployment(sb, 'om', 2);
    await createVA(sb, 'om', { model: 'om-model' });
    await loadPods(sb, emitter, 'om', 'om-model', 2, LOAD);
    await loop.waitForVllmSeries('om-model', 2);
    await loop.cycle();
    await waitForCondition(sb, 'om', 'MetricsAvailable', 'True', 'MetricsFound');
    const ns = sb.namespace;
    const until = async (what: string, promql: string, ok: (v: number | undefined) => boolean) => {
      let last: number | undefined;
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline) {
        last = await one(promql);
        if (ok(last)) return last;
        await new Promise((r) => setTimeout(r, 250));
      }
      throw new Error(`${what}: last value ${String(last)} for ${promql}`);
    };

    // The cycle's duration, as a histogram with status="success" (seconds: more than 0, less than the test's 30 s wait).
    await until('a successful cycle counted', 'wva_optimization_duration_seconds_count{status="success"}', (v) => v !== undefined && v >= 1);
    const sum = await one('wva_optimization_duration_seconds_sum{status="success"}');
    expect(sum).toBeGreaterThan(0);
    expect(sum).toBeLessThan(30);
    expect(await one('wva_optimization_duration_seconds_bucket{status="success",le="+Inf"}')).toBeGreaterThanOrEqual(1);
    await until('one model processed', 'wva_models_processed', (v) => v === 1);

    // Both pods reported within the fresh threshold.
    await until('two fresh pods', `wva_metrics_freshness_status{variant_name="om",status="fresh"}`, (v) => v === 2);
    await until('two pods discovered', `wva_metrics_pods_discovered{exported_namespace="${ns}"}`, (v) => v === 2);

    // V1 saturation: utilization = mean KV use; required 0/1 (unit binary); spare = threshold-relative spare KV.
    const sat = `variant_name="om",exported_namespace="${ns}",model_name="om-model"`;
    await until('utilization 0.5', `wva_saturation_utilization{${sat},accelerator_type="A100"}`, (v) => v !== undefined && Math.abs(v - 0.5) < 1e-9);
    expect(await one(`wva_required_capacity{${sat},unit="binary"}`)).toBe(0);
    expect(await one(`wva_spare_capacity{${sat},unit=""}`)).toBeCloseTo(0.3, 9);
    expect(await one(`wva_saturation_metrics_up{variant_name="om",exported_namespace="${ns}"}`)).toBe(1);

    // The configuration in effect (the loop's saturation ConfigMap, GLOBAL_OPT_INTERVAL 1h).
    expect(await one('wva_config_info{analyzer_name="",limiter_enabled="false",scale_to_zero_enabled="false"}')).toBe(1);
    expect(await one('wva_config_kv_spare_threshold')).toBeCloseTo(0.1, 9);
    expect(await one('wva_config_queue_spare_threshold')).toBe(3);
    expect(await one('wva_config_optimization_interval_seconds')).toBe(3600);

    // Each model's saturation queries were timed.
    expect(await one('wva_metrics_collection_duration_seconds_count{query_type="kv_cache"}')).toBeGreaterThanOrEqual(1);
    expect(await one('wva_metrics_collection_duration_seconds_count{query_type="queue_length"}')).toBeGreaterThanOrEqual(1);
  });

  it('a Prometheus that refuses connections: collection errors and collector errors are counted, and survive the next good cycle', async () => {
    const { sb } = loop;
    // Nothing listens on port 1: the saturation queries fail with "connection refused".
    await upsertConfigMap(sb, CTRL, { GLOBAL_OPT_INTERVAL: '1h', PROMETHEUS_BASE_URL: 'http://127.0.0.1:1' });
    await loop.cycle();
    await waitForCondition(sb, 'om', 'MetricsAvailable', 'False', 'PrometheusError');
    await upsertConfigMap(sb, CTRL, { GLOBAL_OPT_INTERVAL: '1h', PROMETHEUS_BASE_URL: loop.prometheus.url });
    await loop.cycle();
    await waitForCondition(sb, 'om', 'MetricsAvailable', 'True', 'MetricsFound');

    const deadline = Date.now() + 20_000;
    let errors: number | undefined;
    let refused: number | undefined;
    while (Date.now() < deadline) {
      errors = await one('sum(wva_errors_total{component="collector"})');
      refused = await one('wva_metrics_collection_errors_total{query_type="kv_cache",reason="connection_refused"}');
      if (errors !== undefined && errors >= 1 && refused !== undefined && refused >= 1) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(errors).toBeGreaterThanOrEqual(1);
    expect(refused).toBeGreaterThanOrEqual(1);
    // Two cycles ran since the first test, each timed.
    expect(await one('wva_optimization_duration_seconds_count{status="success"}')).toBeGreaterThanOrEqual(3);
  });
});
