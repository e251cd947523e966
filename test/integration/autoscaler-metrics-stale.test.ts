import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCycleRecord } from '../../functions/reconcile-autoscaler/state.js';
import { waitFor } from '../harness/sandbox.js';
import { condition, createDeployment, createVA, loadPods, readVA, waitForCondition } from './autoscaler-helpers.js';
import { STEADY, startLoop, waitForScraped, type Loop } from './autoscaler-loop.js';

// Issue 14 scenario 9 (the rest): MetricsStale was never written, and the freshness keys of the
// controller ConfigMap were parsed but did nothing. With PROMETHEUS_METRICS_CACHE_FRESH_THRESHOLD 5s
// and _UNAVAILABLE_THRESHOLD 20s, a pod that stops reporting is stale after 5 s (the last decision is
// held) and missing after 20 s. Before, the queries looked back one minute whatever the keys said.
describe('reconcile-autoscaler: metrics older than the freshness limit are MetricsStale (issue 14 scenario 9)', () => {
  let loop: Loop;

  beforeAll(async () => {
    loop = await startLoop('as-stale', {
      controllerConfig: { PROMETHEUS_METRICS_CACHE_FRESH_THRESHOLD: '5s', PROMETHEUS_METRICS_CACHE_UNAVAILABLE_THRESHOLD: '20s' },
    });
  });
  afterAll(async () => {
    await loop?.stop();
  });

  /** Waits until Prometheus's newest sample of the pod is at least `ageS` seconds old (none within the window). */
  async function noSampleWithin(pod: string, ageS: number): Promise<void> {
    await waitFor(`no sample of ${pod} within ${ageS}s`, 60_000, async () => {
      const r = await loop.query(`count_over_time(vllm:kv_cache_usage_perc{namespace="${loop.sb.namespace}",pod="${pod}"}[${ageS}s])`);
      return r.length === 0 ? true : undefined;
    }, 250);
  }

  it('a pod that stopped reporting: MetricsStale after the fresh threshold (decision held), MetricsMissing after the unavailable one', async () => {
    const { sb, emitter } = loop;
    await createDeployment(sb, 'st', 1);
    await createVA(sb, 'st', { model: 'st-model' });
    const [pod] = await loadPods(sb, emitter, 'st', 'st-model', 1, STEADY);
    await loop.waitForVllmSeries('st-model', 1);
    await loop.cycle();
    await waitForCondition(sb, 'st', 'MetricsAvailable', 'True', 'MetricsFound');
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'st' }, 1);

    // The pod's metrics endpoint stops answering (a hung vLLM): its series end.
    emitter.remove(sb.namespace, pod!);
    await noSampleWithin(pod!, 6);
    await loop.cycle();
    const stale = await waitForCondition(sb, 'st', 'MetricsAvailable', 'False', 'MetricsStale');
    expect(condition(stale.status, 'MetricsAvailable')?.message).toContain('PROMETHEUS_METRICS_CACHE_FRESH_THRESHOLD');
    expect(condition(stale.status, 'OptimizationReady')).toMatchObject({ status: 'False', reason: 'MetricsUnavailable' });
    expect(stale.status?.desiredOptimizedAlloc?.numReplicas).toBe(1);
    expect((await readCycleRecord(sb.redis, sb.prefix))?.decisions.find((d) => d.key === `${sb.namespace}/st`)).toMatchObject({ desiredReplicas: 1, source: 'stale-metrics' });
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'st' }, 1);

    await noSampleWithin(pod!, 21);
    await loop.cycle();
    await waitForCondition(sb, 'st', 'MetricsAvailable', 'False', 'MetricsMissing');
    expect((await readVA(sb, 'st')).status?.desiredOptimizedAlloc?.numReplicas).toBe(1);
  });
});
