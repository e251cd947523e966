/**
 * The autoscaler's loop as the issue-14 scenarios observe it: the vLLM emitter scraped by a real
 * Prometheus, Ripple running the function against the sandbox, and Ripple's own `/metrics` (the
 * function's metrics registry served over HTTP) scraped by the same Prometheus, so `wva_*` values
 * are asserted through the Prometheus query API, as an HPA or KEDA would read them.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { expect } from 'vitest';
import { z } from 'zod';
import type { FunctionDefinition } from '../../runtime/function.js';
import { readStoredConfig } from '../../functions/reconcile-autoscaler/config-store.js';
import { FUNCTION_NAME } from '../../functions/reconcile-autoscaler/keys.js';
import { registerAutoscalerMetrics } from '../../functions/reconcile-autoscaler/metrics/collector.js';
import { readCycleRecord } from '../../functions/reconcile-autoscaler/state.js';
import { VllmEmitter } from '../fixtures/vllm-emitter.js';
import { startPrometheus, type PrometheusOptions, type RunningPrometheus } from '../harness/prometheus.js';
import { startRipple, type RunningRipple } from '../harness/ripple.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';
import { autoscalerEnv, recordedDefinition, upsertConfigMap, type RecordedReconcile } from './autoscaler-helpers.js';

export const SAT = 'saturation-scaling-config';
export const CTRL = 'workload-variant-autoscaler-variantautoscaling-config';
export const STEADY = { kvCacheUsage: 0.5, waiting: 0 }; // neither scale-up (spare 0.3 ≥ 0.1) nor a safe scale-down
export const HOT = { kvCacheUsage: 0.85, waiting: 0 }; // saturated: scale up

export interface Loop {
  sb: TestSandbox;
  emitter: VllmEmitter;
  prometheus: RunningPrometheus;
  ripple: RunningRipple;
  calls: RecordedReconcile[];
  registry: Registry;
  /** Runs one optimization cycle the way the tick does; resolves once it has been recorded. */
  cycle(): Promise<void>;
  /** The scraped value of `name{exported_namespace=<test ns>, …labels}`, undefined when Prometheus has no such series. */
  scraped(name: string, labels: Record<string, string>): Promise<number | undefined>;
  /** An instant query's samples as Prometheus answers it. */
  query(promql: string): Promise<Array<{ metric: Record<string, string>; value: number }>>;
  /** How many series `name{exported_namespace=<test ns>, …labels}` Prometheus has now. */
  scrapedCount(name: string, labels: Record<string, string>): Promise<number>;
  /** Waits until every VA reconcile the last cycle enqueued has run and nothing ran for `quietMs`. */
  quiet(quietMs?: number): Promise<void>;
  waitForVllmSeries(model: string, pods: number): Promise<void>;
  stop(): Promise<void>;
}

const vectorSchema = z.object({ status: z.string(), data: z.object({ result: z.array(z.object({ metric: z.record(z.string(), z.string()), value: z.tuple([z.number(), z.string()]) })) }) });

async function serveRegistry(registry: Registry): Promise<{ server: Server; target: string }> {
  const server = createServer((req, res) => {
    if (req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(text),
      (err: unknown) => res.writeHead(500).end(String(err)),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, target: `127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const selector = (labels: Record<string, string>) =>
  Object.entries(labels)
    .map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`)
    .join(',');

export async function startLoop(
  label: string,
  opts: {
    env?: Record<string, string>;
    controllerConfig?: Record<string, string>;
    prometheus?: Partial<PrometheusOptions>;
    /** Give Ripple the Prometheus URL in the controller ConfigMap (with its other settings) instead of the environment. */
    prometheusInConfigMap?: boolean;
    /** How many processes serve Ripple's /metrics (two during an ops-server rollout); default 1. */
    exporters?: number;
    /** More `host:port` targets scraped beside the vLLM emitter (an EPP's metrics, for scale from zero). */
    extraTargets?: string[];
    /** More functions Ripple runs beside the autoscaler (reconcile-modelserving, for ModelServing and LeaderWorkerSet targets). */
    functions?: FunctionDefinition[];
  } = {},
): Promise<Loop> {
  const sb = await openSandbox(label);
  const emitter = new VllmEmitter();
  const registry = new Registry();
  const vllmTarget = await emitter.start();
  const exporters = await Promise.all(Array.from({ length: opts.exporters ?? 1 }, () => serveRegistry(registry)));
  const prometheus = await startPrometheus({ targets: [vllmTarget, ...(opts.extraTargets ?? [])], rippleTargets: exporters.map((e) => e.target), scrapeIntervalMs: 1000, ...opts.prometheus });
  await prometheus.waitForTargetsUp();
  const env = autoscalerEnv(sb, { ...(opts.prometheusInConfigMap ? {} : { PROMETHEUS_URL: prometheus.url }), ...opts.env });
  await upsertConfigMap(sb, CTRL, { GLOBAL_OPT_INTERVAL: '1h', ...(opts.prometheusInConfigMap ? { PROMETHEUS_BASE_URL: prometheus.url } : {}), ...opts.controllerConfig });
  await upsertConfigMap(sb, SAT, { default: 'kvCacheThreshold: 0.80\nqueueLengthThreshold: 5\nkvSpareTrigger: 0.1\nqueueSpareTrigger: 3\nenableLimiter: false\n' });
  const recorded = recordedDefinition(env);
  const ripple = await startRipple(sb, [recorded.def, ...(opts.functions ?? [])], { env });
  registerAutoscalerMetrics(registry, { redis: sb.redis, prefix: sb.prefix, env: { ...process.env, ...env } });
  await waitFor('the configuration in Redis', 20_000, async () => (await readStoredConfig({ redis: sb.redis, prefix: sb.prefix }))?.controller.globalOptIntervalMs === 3_600_000);

  const vector = async (promql: string) => vectorSchema.parse(await prometheus.query(promql)).data.result;
  const calls = recorded.calls;
  return {
    sb,
    emitter,
    prometheus,
    ripple,
    calls,
    registry,
    async cycle() {
      const startedAt = Date.now();
      expect(await ripple.host.resync(FUNCTION_NAME)).toBe(1);
      await waitFor('an optimization cycle', 30_000, async () => {
        const r = await readCycleRecord(sb.redis, sb.prefix);
        return r !== undefined && Date.parse(r.at) >= startedAt - 1000;
      });
    },
    async scraped(name, labels) {
      // Several exporters serve the same value (it is read from Redis); any one of them will do.
      const r = await vector(`max(${name}{${selector({ exported_namespace: sb.namespace, ...labels })}})`);
      return r[0] ? Number(r[0].value[1]) : undefined;
    },
    async query(promql) {
      return (await vector(promql)).map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
    },
    async scrapedCount(name, labels) {
      return (await vector(`${name}{${selector({ exported_namespace: sb.namespace, ...labels })}}`)).length;
    },
    async quiet(quietMs = 1_500) {
      await waitFor('the queue to go quiet', 30_000, async () => Date.now() - (calls.at(-1)?.at ?? 0) > quietMs, 250);
    },
    async waitForVllmSeries(model, pods) {
      await waitFor(`${pods} series of ${model} in Prometheus`, 30_000, async () => {
        const r = await vector(`count(vllm:kv_cache_usage_perc{namespace="${sb.namespace}",model_name="${model}"})`);
        return r[0]?.value[1] === String(pods);
      });
    },
    async stop() {
      await ripple.stop();
      await prometheus.stop();
      await emitter.stop();
      for (const { server } of exporters) await new Promise<void>((resolve) => server.close(() => resolve()));
      await sb.cleanup();
    },
  };
}

/** Waits until Prometheus shows this value for the series (undefined: the series is gone). */
export async function waitForScraped(loop: Loop, name: string, labels: Record<string, string>, value: number | undefined, timeoutMs = 20_000): Promise<void> {
  let last: number | undefined;
  try {
    await waitFor(`${name}${JSON.stringify(labels)} = ${String(value)} in Prometheus`, timeoutMs, async () => {
      last = await loop.scraped(name, labels);
      return last === value;
    }, 250);
  } catch (err) {
    throw new Error(`${err instanceof Error ? err.message : String(err)} (last scraped: ${String(last)})`, { cause: err });
  }
}
