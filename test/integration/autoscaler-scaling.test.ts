import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readStoredConfig } from '../../functions/reconcile-autoscaler/config-store.js';
import { FUNCTION_NAME } from '../../functions/reconcile-autoscaler/keys.js';
import { registerAutoscalerMetrics } from '../../functions/reconcile-autoscaler/metrics/collector.js';
import { readCycleRecord } from '../../functions/reconcile-autoscaler/state.js';
import { RESYNC_SCHEDULER_ID } from '../../queue/resync.js';
import { WorkQueue } from '../../queue/work-queue.js';
import { VllmEmitter, type PodLoad } from '../fixtures/vllm-emitter.js';
import { startPrometheus, type RunningPrometheus } from '../harness/prometheus.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import {
  autoscalerEnv,
  condition,
  createDeployment,
  createVA,
  desiredReplicas,
  loadPods,
  metricValue,
  readVA,
  recordedDefinition,
  runningPods,
  scaleDeployment,
  upsertConfigMap,
  waitForCondition,
} from './autoscaler-helpers.js';

const SAT = 'saturation-scaling-config';
const CTRL = 'workload-variant-autoscaler-variantautoscaling-config';
const DEFAULT_ENTRY = 'kvCacheThreshold: 0.80\nqueueLengthThreshold: 5\nkvSpareTrigger: 0.1\nqueueSpareTrigger: 3\nenableLimiter: false\n';
const INTERVAL_MS = 2_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// The saturation engine end to end: vLLM pods (the emitter) → a real Prometheus → WVA's queries →
// decisions → VA status and wva_* gauges, on real ticks every GLOBAL_OPT_INTERVAL (2 s here).
describe('reconcile-autoscaler: saturation scaling with a real Prometheus', () => {
  let sb: TestSandbox;
  let emitter: VllmEmitter;
  let prometheus: RunningPrometheus;
  let ripple: RunningRipple;
  const registry = new Registry();

  beforeAll(async () => {
    sb = await openSandbox('as-scale');
    emitter = new VllmEmitter();
    prometheus = await startPrometheus({ targets: [await emitter.start()], scrapeIntervalMs: 1000 });
    await prometheus.waitForTargetsUp();
    const env = autoscalerEnv(sb, { PROMETHEUS_URL: prometheus.url });
    await upsertConfigMap(sb, SAT, { default: DEFAULT_ENTRY });
    ripple = await startRipple(sb, [recordedDefinition(env).def], { env });
    registerAutoscalerMetrics(registry, { redis: sb.redis, prefix: sb.prefix, env: { ...process.env, ...env } });
    // As a leader does: the tick at the definition's default (60 s) ...
    await ripple.host.scheduleResyncs();
    const queue = new WorkQueue({ name: FUNCTION_NAME, connection: sb.redis, prefix: sb.prefix });
    try {
      expect((await queue.bull.getJobScheduler(RESYNC_SCHEDULER_ID))?.every).toBe(60_000);
      // ... then GLOBAL_OPT_INTERVAL from the controller ConfigMap, applied live.
      await upsertConfigMap(sb, CTRL, { GLOBAL_OPT_INTERVAL: `${INTERVAL_MS / 1000}s` });
      await waitFor('the tick at GLOBAL_OPT_INTERVAL', 20_000, async () => (await queue.bull.getJobScheduler(RESYNC_SCHEDULER_ID))?.every === INTERVAL_MS);
    } finally {
      await queue.close();
    }
  });

  afterAll(async () => {
    await ripple?.stop();
    await prometheus?.stop();
    await emitter?.stop();
    await sb?.cleanup();
  });

  async function variant(name: string, model: string, cost: string, replicas: number, load: PodLoad): Promise<string[]> {
    await createDeployment(sb, name, replicas);
    await createVA(sb, name, { model, cost });
    return loadPods(sb, emitter, name, model, replicas, load);
  }

  /** Sets the load of every running pod of a Deployment (new pods included). */
  async function setLoad(name: string, model: string, load: PodLoad): Promise<void> {
    for (const pod of await runningPods(sb, name)) emitter.set(sb.namespace, model, pod, load);
  }

  /** Waits until the VA's desired replicas is `n` on a decision from metrics. */
  async function waitForDesired(name: string, n: number, timeoutMs = 45_000): Promise<void> {
    let last: Awaited<ReturnType<typeof readVA>> | undefined;
    try {
      await waitFor(`${name} desired ${n}`, timeoutMs, async () => {
        last = await readVA(sb, name);
        return last.status?.desiredOptimizedAlloc?.numReplicas === n && condition(last.status, 'MetricsAvailable')?.status === 'True';
      }, 250);
    } catch (err) {
      // What the VA and the last cycle said, so a timeout tells which step did not happen.
      const cycle = await readCycleRecord(sb.redis, sb.prefix);
      const seen = { status: last?.status, cycleAt: cycle?.at, cycleModels: cycle?.models.filter((m) => m.key.startsWith(`${name}|`)), inactive: cycle?.inactive };
      throw new Error(`${err instanceof Error ? err.message : String(err)}; last seen: ${JSON.stringify(seen)}`, { cause: err });
    }
  }

  /** Watches `names` for `cycles` ticks and returns every desired value seen per VA. */
  async function observe(names: string[], cycles: number): Promise<Record<string, number[]>> {
    const seen: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
    const until = Date.now() + cycles * INTERVAL_MS;
    while (Date.now() < until) {
      for (const n of names) seen[n]!.push((await desiredReplicas(sb, n)) ?? -1);
      await sleep(300);
    }
    return seen;
  }

  it('rising KV-cache use scales the cheaper variant up by one, and only by one', async () => {
    const idle = { kvCacheUsage: 0.3, waiting: 0 };
    await variant('rise-cheap', 'rise', '10.0', 1, idle);
    await variant('rise-dear', 'rise', '40.0', 1, idle);
    await waitForDesired('rise-cheap', 1);
    await waitForDesired('rise-dear', 1);
    // Idle at one replica each: nothing to remove, nothing to add.
    const before = await observe(['rise-cheap', 'rise-dear'], 2);
    expect(new Set([...before['rise-cheap']!, ...before['rise-dear']!])).toEqual(new Set([1]));

    await setLoad('rise-cheap', 'rise', { kvCacheUsage: 0.75, waiting: 1 });
    await setLoad('rise-dear', 'rise', { kvCacheUsage: 0.75, waiting: 1 });
    await waitForDesired('rise-cheap', 2);
    expect(await desiredReplicas(sb, 'rise-dear')).toBe(1);
    const cheap = await readVA(sb, 'rise-cheap');
    expect(condition(cheap.status, 'OptimizationReady')).toMatchObject({ status: 'True', reason: 'OptimizationSucceeded' });
    expect(condition(cheap.status, 'OptimizationReady')?.message).toContain('cheapest variant rise-cheap');
    expect(cheap.status?.phase).toBe('Ready');

    // Nobody actuates here, so the model is in transition (desired 2 ≠ current 1): it holds, no second step.
    const after = await observe(['rise-cheap', 'rise-dear'], 3);
    expect(new Set(after['rise-cheap'])).toEqual(new Set([2]));
    expect(new Set(after['rise-dear'])).toEqual(new Set([1]));

    const labels = { variant_name: 'rise-cheap', namespace: sb.namespace, accelerator_type: 'A100' };
    expect(await metricValue(registry, 'wva_desired_replicas', labels)).toBe(2);
    expect(await metricValue(registry, 'wva_optimized_replicas', labels)).toBe(2);
    expect(await metricValue(registry, 'wva_current_replicas', labels)).toBe(1);
    expect(await metricValue(registry, 'wva_desired_ratio', labels)).toBe(2);
    expect(await metricValue(registry, 'wva_desired_replicas', { ...labels, variant_name: 'rise-dear' })).toBe(1);
  });

  it('idle load scales down by one safely; a busy model is not scaled down', async () => {
    await variant('idle', 'idle', '10.0', 3, { kvCacheUsage: 0.1, waiting: 0 });
    const busy = await variant('busy', 'busy', '10.0', 2, { kvCacheUsage: 0.6, waiting: 1 });
    emitter.set(sb.namespace, 'busy', busy[1]!, { kvCacheUsage: 0.65, waiting: 1 });
    await waitForDesired('idle', 2);
    await waitForDesired('busy', 2);
    const seen = await observe(['idle', 'busy'], 3);
    // One replica per cycle at most, and held while the Deployment has not followed.
    expect(new Set(seen['idle'])).toEqual(new Set([2]));
    // Spread over one replica fewer, the busy pods' KV use (0.625 × 2) would exceed the threshold.
    expect(new Set(seen['busy'])).toEqual(new Set([2]));
    const record = await readCycleRecord(sb.redis, sb.prefix);
    expect(record?.models.find((m) => m.key === `busy|${sb.namespace}`)?.step?.kind).toBe('none');
  });

  it('two variants costing 30 and 50 under load: the cheaper one’s desired is always ≥ the other’s', async () => {
    const hot = { kvCacheUsage: 0.78, waiting: 2 };
    await variant('c30', 'cost', '30', 1, hot);
    await variant('c50', 'cost', '50', 1, hot);
    const [k30, k50] = [`${sb.namespace}/c30`, `${sb.namespace}/c50`];
    // One sample per cycle, both values from that cycle's record: a pair read from two statuses could
    // mix two cycles. The test plays HPA: it scales each Deployment to its desired replicas and gives
    // new pods the load.
    const samples = new Map<string, [number, number]>();
    let stop = false;
    const actuator = (async () => {
      while (!stop) {
        const record = await readCycleRecord(sb.redis, sb.prefix);
        const d30 = record?.decisions.find((d) => d.key === k30)?.desiredReplicas;
        const d50 = record?.decisions.find((d) => d.key === k50)?.desiredReplicas;
        if (record !== undefined && d30 !== undefined && d50 !== undefined) samples.set(record.at, [d30, d50]);
        for (const [name, d] of [['c30', d30], ['c50', d50]] as const) {
          if (d !== undefined && d > 0) await scaleDeployment(sb, name, d);
          await setLoad(name, 'cost', hot);
        }
        await sleep(300); // the actuator's pace, not an assertion
      }
    })();
    try {
      // Until c30 reached 3 *and* at least 3 cycles were sampled: on a slow machine the ramp can be
      // over before the actuator has sampled more than one cycle (seen once: 1 sample).
      await waitFor('c30 desired 3, and 3 cycles sampled', 120_000, async () => samples.size >= 3 && [...samples.values()].some(([d30]) => d30 >= 3), 250);
    } finally {
      stop = true;
      await actuator;
    }
    const seen = [...samples.values()];
    expect(seen.filter(([d30, d50]) => d30 < d50)).toEqual([]);
    expect(seen.some(([d30]) => d30 >= 2)).toBe(true);
    expect(await desiredReplicas(sb, 'c50')).toBe(1);
  });

  it('a per-model override in the saturation ConfigMap is used by the next tick, without a restart', async () => {
    await variant('cfg', 'cfg', '10.0', 2, { kvCacheUsage: 0.5, waiting: 0 });
    await waitForDesired('cfg', 2);
    expect(new Set((await observe(['cfg'], 2))['cfg'])).toEqual(new Set([2]));
    // With the saturation threshold at 0.55, 0.5 leaves 0.05 spare (< kvSpareTrigger 0.1): scale up.
    await upsertConfigMap(sb, SAT, { default: DEFAULT_ENTRY, 'cfg-lab': `model_id: cfg\nnamespace: ${sb.namespace}\nkvCacheThreshold: 0.55\n` });
    await waitFor('the override in Redis', 20_000, async () => (await readStoredConfig({ redis: sb.redis, prefix: sb.prefix }))?.saturation.overrides.some((o) => o.key === 'cfg-lab'));
    await waitForDesired('cfg', 3);
    const record = await readCycleRecord(sb.redis, sb.prefix);
    const model = record?.models.find((m) => m.key === `cfg|${sb.namespace}`);
    expect(model).toMatchObject({ overrideKey: 'cfg-lab', thresholds: { kvCacheThreshold: 0.55 } });
    // Other models keep the default.
    expect(record?.models.find((m) => m.key === `rise|${sb.namespace}`)?.thresholds.kvCacheThreshold).toBe(0.8);
  });

  it('Prometheus unreachable: DependenciesReachable=False at once, Degraded after the grace period, last decision held', async () => {
    await prometheus.stop();
    const va = await waitForCondition(sb, 'rise-cheap', 'DependenciesReachable', 'False', 'PrometheusError', 20_000);
    expect(condition(va.status, 'MetricsAvailable')).toMatchObject({ status: 'False', reason: 'PrometheusError' });
    const degraded = await waitFor('rise-cheap Degraded', 30_000, async () => {
      const v = await readVA(sb, 'rise-cheap');
      return v.status?.phase === 'Degraded' ? v : undefined;
    });
    expect(condition(degraded.status, 'Ready')).toMatchObject({ status: 'False', reason: 'DependenciesUnreachable' });
    expect(degraded.status?.desiredOptimizedAlloc?.numReplicas).toBe(2);
  });
});
