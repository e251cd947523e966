import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readStoredConfig } from '../../functions/reconcile-autoscaler/config-store.js';
import { FUNCTION_NAME, stateKeys } from '../../functions/reconcile-autoscaler/keys.js';
import { registerAutoscalerMetrics } from '../../functions/reconcile-autoscaler/metrics/collector.js';
import { readCycleRecord } from '../../functions/reconcile-autoscaler/state.js';
import { kubeRequest } from '../../kube/raw.js';
import { objectPath, Resources } from '../../kube/resources.js';
import { RESYNC_SCHEDULER_ID } from '../../queue/resync.js';
import { WorkQueue } from '../../queue/work-queue.js';
import { eventRequestsKey } from '../../runtime/event-sink.js';
import { VllmEmitter } from '../fixtures/vllm-emitter.js';
import { startPrometheus, type RunningPrometheus } from '../harness/prometheus.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import {
  autoscalerEnv,
  condition,
  createDeployment,
  createVA,
  deleteDeployment,
  loadPods,
  metricValue,
  readVA,
  recordedDefinition,
  upsertConfigMap,
  waitForCondition,
  type RecordedReconcile,
} from './autoscaler-helpers.js';

const SAT = 'saturation-scaling-config';
const CTRL = 'workload-variant-autoscaler-variantautoscaling-config';
/** "At once": well under one tick, which is an hour here. */
const AT_ONCE_MS = 10_000;

// Seed 003's event-flow examples, on the sandbox, with a real Prometheus scraping the vLLM emitter.
// GLOBAL_OPT_INTERVAL is an hour, so whatever happens within seconds was caused by an event; cycles
// are run by hand through the resync path a tick takes.
describe('reconcile-autoscaler: seed 003 examples 1–4', () => {
  let sb: TestSandbox;
  let emitter: VllmEmitter;
  let prometheus: RunningPrometheus;
  let ripple: RunningRipple;
  let calls: RecordedReconcile[];
  const registry = new Registry();

  beforeAll(async () => {
    sb = await openSandbox('as-seed');
    emitter = new VllmEmitter();
    const target = await emitter.start();
    prometheus = await startPrometheus({ targets: [target], scrapeIntervalMs: 1000 });
    await prometheus.waitForTargetsUp();
    // With credentials (this Prometheus ignores them) and a ConfigMap token: neither may reach Redis.
    const env = autoscalerEnv(sb, { PROMETHEUS_URL: prometheus.url.replace('http://', 'http://wva:hunter2@') });
    await upsertConfigMap(sb, CTRL, { GLOBAL_OPT_INTERVAL: '1h', PROMETHEUS_BEARER_TOKEN: 'cm-secret-token' });
    await upsertConfigMap(sb, SAT, { default: 'kvCacheThreshold: 0.80\nqueueLengthThreshold: 5\nkvSpareTrigger: 0.1\nqueueSpareTrigger: 3\nenableLimiter: false\n' });
    const recorded = recordedDefinition(env);
    calls = recorded.calls;
    ripple = await startRipple(sb, [recorded.def], { env });
    registerAutoscalerMetrics(registry, { redis: sb.redis, prefix: sb.prefix, env: { ...process.env, ...env } });
    await waitFor('the configuration in Redis', 20_000, async () => (await readStoredConfig({ redis: sb.redis, prefix: sb.prefix }))?.controller.globalOptIntervalMs === 3_600_000);
  });

  afterAll(async () => {
    await ripple?.stop();
    await prometheus?.stop();
    await emitter?.stop();
    await sb?.cleanup();
  });

  /** One optimization cycle, the way a tick runs it; resolves once it has been recorded. */
  async function cycle(): Promise<void> {
    const startedAt = new Date();
    expect(await ripple.host.resync(FUNCTION_NAME)).toBe(1);
    await waitFor('an optimization cycle', 30_000, async () => {
      const r = await readCycleRecord(sb.redis, sb.prefix);
      return r !== undefined && Date.parse(r.at) >= startedAt.getTime() - 1000;
    });
  }

  async function waitForSeries(model: string, pods: number): Promise<void> {
    await waitFor(`${pods} series of ${model} in Prometheus`, 30_000, async () => {
      const body = (await prometheus.query(`count(vllm:kv_cache_usage_perc{namespace="${sb.namespace}",model_name="${model}"})`)) as { data?: { result?: Array<{ value: [number, string] }> } };
      return body.data?.result?.[0]?.value[1] === String(pods);
    });
  }

  const steady = { kvCacheUsage: 0.5, waiting: 0 }; // neither scale-up (spare 0.3 ≥ 0.1) nor a safe scale-down

  it('example 1: Deployment created before the VA → the VA resolves its target on creation', async () => {
    await createDeployment(sb, 'ex1', 1);
    await loadPods(sb, emitter, 'ex1', 'ex1-model', 1, steady);
    await createVA(sb, 'ex1', { model: 'ex1-model' });
    const va = await waitForCondition(sb, 'ex1', 'TargetResolved', 'True', 'TargetFound', AT_ONCE_MS);
    expect(condition(va.status, 'TargetResolved')?.message).toBe('Scale target Deployment ex1 found');
    expect(calls.find((c) => c.key === `${sb.namespace}/ex1`)?.reason).toBe('VariantAutoscaling:create');
    // "begins monitoring": the next cycle decides from its pod's metrics.
    await waitForSeries('ex1-model', 1);
    await cycle();
    const ready = await waitForCondition(sb, 'ex1', 'Ready', 'True');
    expect(ready.status?.phase).toBe('Ready');
    expect(condition(ready.status, 'MetricsAvailable')).toMatchObject({ status: 'True', reason: 'MetricsFound' });
    expect(condition(ready.status, 'OptimizationReady')).toMatchObject({ status: 'True', reason: 'OptimizationSucceeded' });
    expect(ready.status?.desiredOptimizedAlloc).toMatchObject({ accelerator: 'A100', numReplicas: 1 });
    expect(ready.status?.actuation).toEqual({ applied: true });
  });

  it('example 2: VA created before its Deployment → TargetNotFound, then resolved at once when the Deployment appears', async () => {
    await createVA(sb, 'ex2', { model: 'ex2-model' });
    const waiting = await waitForCondition(sb, 'ex2', 'TargetResolved', 'False', 'TargetNotFound', AT_ONCE_MS);
    expect(condition(waiting.status, 'TargetResolved')?.message).toBe('Scale target Deployment ex2 not found');
    expect(waiting.status?.phase).toBe('Pending');
    expect(condition(waiting.status, 'Ready')).toMatchObject({ status: 'False', reason: 'DeploymentNotFound' });
    // A missing Deployment is no spec error, and is not retried in a loop: the Deployment watch brings it back.
    expect(condition(waiting.status, 'ConfigValid')?.status).toBe('True');

    const created = Date.now();
    await createDeployment(sb, 'ex2', 1);
    await waitForCondition(sb, 'ex2', 'TargetResolved', 'True', 'TargetFound', AT_ONCE_MS);
    expect(Date.now() - created).toBeLessThan(AT_ONCE_MS);
    const ex2 = calls.filter((c) => c.key === `${sb.namespace}/ex2`).map((c) => c.reason);
    // Then the cycle the VA asked for (no tick) visits it again.
    expect(ex2.slice(0, 2)).toEqual(['VariantAutoscaling:create', 'Deployment:create']);
    // "Operational immediately (no 60 s wait)": once its pod reports, the VA is Ready without a tick.
    await loadPods(sb, emitter, 'ex2', 'ex2-model', 1, steady);
    await waitForCondition(sb, 'ex2', 'Ready', 'True', undefined, 30_000);
  });

  it('example 3: Deployment deleted → TargetNotFound, Ready=False and metrics cleared at once; recreated → operational again', async () => {
    await createDeployment(sb, 'ex3', 3);
    await loadPods(sb, emitter, 'ex3', 'ex3-model', 3, steady);
    await createVA(sb, 'ex3', { model: 'ex3-model' });
    await waitForSeries('ex3-model', 3);
    await cycle();
    const before = await waitForCondition(sb, 'ex3', 'Ready', 'True');
    expect(before.status?.desiredOptimizedAlloc?.numReplicas).toBe(3);
    expect(before.status?.currentAllocation).toEqual({ numReplicas: 3, accelerator: 'A100' });
    const labels = { variant_name: 'ex3', namespace: sb.namespace, accelerator_type: 'A100' };
    expect(await metricValue(registry, 'wva_desired_replicas', labels)).toBe(3);
    expect(await metricValue(registry, 'wva_current_replicas', labels)).toBe(3);

    // Let the VA reconciles the cycle enqueued finish, so the delete's own reconcile is told apart.
    await waitFor('the queue to go quiet', 15_000, async () => Date.now() - (calls.at(-1)?.at ?? 0) > 1_000, 250);
    const deleted = Date.now();
    await deleteDeployment(sb, 'ex3');
    const after = await waitForCondition(sb, 'ex3', 'TargetResolved', 'False', 'TargetNotFound', AT_ONCE_MS);
    expect(Date.now() - deleted).toBeLessThan(AT_ONCE_MS);
    expect(calls.filter((c) => c.key === `${sb.namespace}/ex3`).at(-1)?.reason).toBe('Deployment:delete');
    expect(condition(after.status, 'TargetResolved')?.message).toBe('Scale target Deployment ex3 not found');
    expect(condition(after.status, 'MetricsAvailable')).toMatchObject({ status: 'False', reason: 'MetricsMissing' });
    expect(condition(after.status, 'OptimizationReady')).toMatchObject({ status: 'False', reason: 'MetricsUnavailable' });
    expect(condition(after.status, 'Ready')).toMatchObject({ status: 'False', reason: 'DeploymentNotFound' });
    expect(after.status?.currentAllocation).toEqual({ numReplicas: 0 });
    expect(after.status?.phase).toBe('Pending');
    for (const name of ['wva_desired_replicas', 'wva_optimized_replicas', 'wva_current_replicas', 'wva_desired_ratio']) {
      expect(await metricValue(registry, name, labels), name).toBeUndefined();
    }
    // A cycle while the Deployment is gone brings nothing back.
    await cycle();
    expect(await metricValue(registry, 'wva_desired_replicas', labels)).toBeUndefined();

    const recreated = Date.now();
    await createDeployment(sb, 'ex3', 3);
    await waitForCondition(sb, 'ex3', 'TargetResolved', 'True', 'TargetFound', AT_ONCE_MS);
    expect(Date.now() - recreated).toBeLessThan(AT_ONCE_MS);
    await loadPods(sb, emitter, 'ex3', 'ex3-model', 3, steady);
    await waitForSeries('ex3-model', 6); // the old pods' series are still in Prometheus; they match no pod now
    await cycle();
    const again = await waitForCondition(sb, 'ex3', 'Ready', 'True');
    expect(again.status?.currentAllocation?.numReplicas).toBe(3);
    expect(await metricValue(registry, 'wva_desired_replicas', labels)).toBe(3);
  });

  it('example 4: saturation ConfigMap updated → configuration refreshed without any VA reconcile; the next cycle uses it', async () => {
    // Longer than the first-metrics re-check (5 s): whatever earlier examples set going has settled.
    await waitFor('the queue to go quiet', 60_000, async () => Date.now() - (calls.at(-1)?.at ?? 0) > 6_000, 250);
    const from = calls.length;
    await upsertConfigMap(sb, SAT, { default: 'kvCacheThreshold: 0.70\nqueueLengthThreshold: 5\nkvSpareTrigger: 0.1\nqueueSpareTrigger: 3\n' });
    await waitFor('the configuration refresh', 20_000, async () => (await readStoredConfig({ redis: sb.redis, prefix: sb.prefix }))?.saturation.default.kvCacheThreshold === 0.7);
    await new Promise((r) => setTimeout(r, 2_000)); // room for anything the update might (wrongly) have enqueued
    expect(calls.slice(from).map((c) => `${c.key} ${c.reason}`)).toEqual(['@config ConfigMap:update']);

    await cycle();
    const record = await readCycleRecord(sb.redis, sb.prefix);
    expect(record?.models.find((m) => m.key === `ex1-model|${sb.namespace}`)?.thresholds.kvCacheThreshold).toBe(0.7);
    // The cycle, not the ConfigMap, brought the VAs round.
    await waitFor('VA reconciles after the cycle', 10_000, async () => calls.slice(from).some((c) => c.key === `${sb.namespace}/ex1` && c.reason === 'handler'));
  });

  it('keeps secrets out of Redis: no ConfigMap token in the stored configuration, no URL credentials in the cycle record', async () => {
    const text = (await sb.redis.get(stateKeys(sb.prefix).config)) ?? '';
    expect(text).toContain('3600000');
    expect(text).not.toContain('cm-secret-token');
    const record = await readCycleRecord(sb.redis, sb.prefix);
    expect(record?.prometheus).toBe(prometheus.url.replace('http://', 'http://[redacted]@'));
    expect(JSON.stringify(record)).not.toContain('hunter2');
  });

  it('an unparsable saturation entry is reported by key and the last good value kept', async () => {
    await upsertConfigMap(sb, SAT, { default: 'kvCacheThreshold: 1.7\nqueueLengthThreshold: 5\n' });
    const objectKey = `${sb.namespace}/ConfigMap/${SAT}`;
    const requests = await waitFor('a Warning Event on the ConfigMap', 20_000, async () => {
      const list = await sb.redis.lrange(eventRequestsKey(sb.prefix, objectKey), 0, -1);
      return list.length > 0 ? list.map((t) => JSON.parse(t) as { type: string; reason: string; message: string }) : undefined;
    });
    expect(requests[0]).toMatchObject({ type: 'Warning', reason: 'InvalidConfiguration' });
    expect(requests[0]?.message).toBe('saturation-scaling-config[default]: kvCacheThreshold must be between 0 and 1 (keeping the last good value)');
    const stored = await readStoredConfig({ redis: sb.redis, prefix: sb.prefix });
    expect(stored?.saturation.default.kvCacheThreshold).toBe(0.7);
  });

  it('GLOBAL_OPT_INTERVAL changes the tick live', async () => {
    const queue = new WorkQueue({ name: FUNCTION_NAME, connection: sb.redis, prefix: sb.prefix });
    try {
      expect((await queue.bull.getJobScheduler(RESYNC_SCHEDULER_ID))?.every).toBe(3_600_000);
      await upsertConfigMap(sb, CTRL, { GLOBAL_OPT_INTERVAL: '45m' });
      await waitFor('the tick at 45m', 20_000, async () => (await queue.bull.getJobScheduler(RESYNC_SCHEDULER_ID))?.every === 2_700_000);
    } finally {
      await queue.close();
    }
  });

  it('a deleted VA (its Delete event is blocked) loses its series at the next cycle', async () => {
    const labels = { variant_name: 'ex1', namespace: sb.namespace, accelerator_type: 'A100' };
    await cycle();
    await waitFor('ex1 series', 10_000, async () => (await metricValue(registry, 'wva_desired_replicas', labels)) !== undefined);
    // Let the VA reconciles that cycle enqueued finish: one that ran after the delete would (rightly) clear it too.
    await waitFor('the queue to go quiet', 15_000, async () => Date.now() - (calls.at(-1)?.at ?? 0) > 1_000);
    await kubeRequest(sb.kc, objectPath(Resources.variantAutoscaling, sb.namespace, 'ex1'), { method: 'DELETE' });
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await metricValue(registry, 'wva_desired_replicas', labels)).toBe(1); // nothing reacted to the delete
    await cycle();
    await waitFor('ex1 series gone', 10_000, async () => (await metricValue(registry, 'wva_desired_replicas', labels)) === undefined);
  });

  it('a VA the API accepts but that cannot work: ConfigValid=False naming the field, and no retry loop', async () => {
    await createVA(sb, 'bad-kind', { model: 'bad', kind: 'ReplicaSet' });
    const va = await waitForCondition(sb, 'bad-kind', 'ConfigValid', 'False', 'InvalidSpec', AT_ONCE_MS);
    expect(condition(va.status, 'ConfigValid')?.message).toContain('spec.scaleTargetRef.kind: "ReplicaSet" is not supported');
    expect(va.status?.phase).toBe('Failed');
    expect(condition(va.status, 'Stalled')?.status).toBe('True');
    expect(condition(va.status, 'TargetResolved')?.status).toBe('False');
    await new Promise((r) => setTimeout(r, 3_000));
    // Never retried with backoff (a cycle's resync visits it, as it visits every VA), and its status is not rewritten.
    const reasons = calls.filter((c) => c.key === `${sb.namespace}/bad-kind`).map((c) => c.reason);
    expect(reasons[0]).toBe('VariantAutoscaling:create');
    expect(reasons).not.toContain('retry');
    expect((await readVA(sb, 'bad-kind')).metadata.resourceVersion).toBe(va.metadata.resourceVersion);
  });
});
