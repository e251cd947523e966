import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AppsV1Api } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { FUNCTION_NAME } from '../../functions/reconcile-autoscaler/keys.js';
import { registerAutoscalerMetrics } from '../../functions/reconcile-autoscaler/metrics/collector.js';
import { isStatus, kubeRequest } from '../../kube/raw.js';
import { apiVersionOf, collectionPath, objectPath, Resources, type ResourceRef } from '../../kube/resources.js';
import { RESYNC_SCHEDULER_ID } from '../../queue/resync.js';
import { WorkQueue } from '../../queue/work-queue.js';
import { startKeda, type RunningKeda } from '../../sandbox/keda.js';
import { modelServingFunctions, msManifest } from '../fixtures/modelserving-fixtures.js';
import { waitFor } from '../harness/sandbox.js';
import { autoscalerEnv, condition, createDeployment, createVA, runningPods, runningPodsMatching, upsertConfigMap, waitForCondition } from './autoscaler-helpers.js';
import { CTRL, startLoop, waitForScraped, type Loop } from './autoscaler-loop.js';

const INTERVAL_MS = 2_000;
/** Generous: on a loaded 2-core machine a step (tick, scrape, HPA sync, Deployment update) can take a while. */
const STEP_MS = 150_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Small windows so the HPA follows the decision at once; the autoscaler itself moves one replica per cycle. */
const BEHAVIOR = {
  scaleUp: { stabilizationWindowSeconds: 0, policies: [{ type: 'Pods', value: 10, periodSeconds: 5 }] },
  scaleDown: { stabilizationWindowSeconds: 0, policies: [{ type: 'Pods', value: 10, periodSeconds: 5 }] },
};

const scaledObjectSchema = z.object({
  apiVersion: z.literal('keda.sh/v1alpha1'),
  kind: z.literal('ScaledObject'),
  metadata: z.object({ name: z.string(), namespace: z.string() }),
  spec: z
    .object({
      scaleTargetRef: z.object({ name: z.string() }).passthrough(),
      triggers: z.array(z.object({ type: z.string(), metadata: z.object({ query: z.string(), serverAddress: z.string() }).passthrough() }).passthrough()),
    })
    .passthrough(),
});
type ScaledObject = z.infer<typeof scaledObjectSchema>;

const conditionSchema = z.object({ type: z.string(), status: z.string(), reason: z.string().optional(), message: z.string().optional() });
const scaledObjectStatusSchema = z.object({
  status: z
    .object({
      conditions: z.array(conditionSchema).optional(),
      externalMetricNames: z.array(z.string()).optional(),
      health: z.record(z.string(), z.object({ numberOfFailures: z.number().optional(), status: z.string().optional() })).optional(),
    })
    .optional(),
});
const specReplicasSchema = z.object({ spec: z.object({ replicas: z.number().optional() }).passthrough() });
const scaleSchema = z.object({ status: z.object({ selector: z.string().optional() }).optional() });
const vectorResultSchema = z.object({ data: z.object({ result: z.array(z.object({ value: z.tuple([z.number(), z.string()]) })) }) });
const hpaSchema = z.object({
  status: z.object({ desiredReplicas: z.number().optional(), conditions: z.array(conditionSchema).optional() }).optional(),
});
const eventListSchema = z.object({
  items: z.array(
    z.object({
      type: z.string().optional(),
      reason: z.string().optional(),
      message: z.string().optional(),
      involvedObject: z.object({ kind: z.string().optional(), name: z.string().optional() }),
    }),
  ),
});

/** What a ScaledObject scales: a Deployment by name, or another kind with a scale subresource. */
type ScaleTargetRef = { apiVersion?: string; kind?: string; name: string };

/** The repository's example ScaledObject, pointed at this test's target (a Deployment's name, or a ref), VA (`variant`), namespace and Prometheus. */
function exampleScaledObject(name: string, target: string | ScaleTargetRef, variant: string, namespace: string, prometheusUrl: string): ScaledObject {
  const docs = parseAllDocuments(readFileSync('infra/examples/autoscaler/keda-scaledobject.yaml', 'utf8')).map((d) => d.toJS() as unknown);
  const so = scaledObjectSchema.parse(docs.find((d) => scaledObjectSchema.safeParse(d).success));
  const triggers = so.spec.triggers.map((t) =>
    t.type === 'prometheus'
      ? { ...t, metadata: { ...t.metadata, serverAddress: prometheusUrl, query: t.metadata.query.replaceAll('llama-8b-a100-va', variant).replaceAll('llm-inference', namespace) } }
      : t,
  );
  return { ...so, metadata: { name, namespace }, spec: { ...so.spec, scaleTargetRef: typeof target === 'string' ? { name: target } : target, triggers } };
}

/**
 * One Ripple process's /metrics during an ops-server rollout: it can be switched off (its pod gone),
 * which Prometheus sees as a failed scrape, so the process's series go stale as in a cluster.
 */
interface Exporter {
  target: string;
  serving: boolean;
  close(): Promise<void>;
}

async function startExporter(registry: Registry): Promise<Exporter> {
  const exporter: Exporter = { target: '', serving: true, close: async () => undefined };
  const server: Server = createServer((req, res) => {
    if (req.url !== '/metrics' || !exporter.serving) {
      res.writeHead(exporter.serving ? 404 : 503).end();
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(text),
      (err: unknown) => res.writeHead(500).end(String(err)),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  exporter.target = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  exporter.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return exporter;
}

// Issue 14, "the loop, real": the vLLM-metrics emitter's KV-cache load → Ripple's cycle (real ticks) →
// wva_desired_replicas scraped by a real Prometheus → KEDA (its operator and metrics server, built
// from the Go module proxy) → an HPA → the Deployment's spec.replicas, up and back down.
describe('reconcile-autoscaler: the whole loop through KEDA and an HPA (issue 14)', () => {
  let loop: Loop;
  let keda: RunningKeda | undefined;
  const registry = new Registry();
  const exporters: Exporter[] = [];
  /**
   * Total KV-cache demand per target, in pods' worth: each running pod reports demand ÷ pods. A Deployment's
   * pods are its `app` label's; another kind's are those its scale subresource's selector names.
   */
  const demand = new Map<string, { model: string; total: number; pods?: () => Promise<string[]> }>();
  let following = true;
  let follower: Promise<void> | undefined;
  const timings: Record<string, number> = {};
  const scaledObjects: string[] = [];

  beforeAll(async () => {
    exporters.push(await startExporter(registry), await startExporter(registry));
    // reconcile-modelserving too: it converges the ModelServing and LeaderWorkerSet targets and writes the pod
    // selector of their scale subresources, without which the HPA KEDA makes cannot scale them.
    loop = await startLoop('as-keda-e2e', { prometheus: { rippleTargets: exporters.map((e) => e.target) }, functions: modelServingFunctions() });
    const { sb, ripple } = loop;
    registerAutoscalerMetrics(registry, { redis: sb.redis, prefix: sb.prefix, env: { ...process.env, ...autoscalerEnv(sb) } });
    // One Ripple process exports until the rollout test starts a second one.
    exporters[1]!.serving = false;

    // Real ticks, as a leader runs them, at GLOBAL_OPT_INTERVAL from the ConfigMap.
    await upsertConfigMap(sb, CTRL, { GLOBAL_OPT_INTERVAL: `${INTERVAL_MS / 1000}s` });
    await ripple.host.scheduleResyncs();
    const queue = new WorkQueue({ name: FUNCTION_NAME, connection: sb.redis, prefix: sb.prefix });
    try {
      await waitFor('the tick at GLOBAL_OPT_INTERVAL', 30_000, async () => (await queue.bull.getJobScheduler(RESYNC_SCHEDULER_ID))?.every === INTERVAL_MS);
    } finally {
      await queue.close();
    }

    // vLLM pods report their share of the Deployment's load, new pods included, as traffic spreads.
    follower = (async () => {
      while (following) {
        for (const [deployment, d] of demand) {
          const pods = await (d.pods ?? (() => runningPods(sb, deployment)))().catch(() => []);
          for (const pod of pods) loop.emitter.set(sb.namespace, d.model, pod, { kvCacheUsage: Math.min(0.99, d.total / pods.length), waiting: 0 });
        }
        await sleep(250);
      }
    })();

    keda = await startKeda({ kubeconfig: inject('kubeconfig'), watchNamespaces: [sb.namespace], log: (line) => console.error(line) });
  }, 400_000);

  afterAll(async () => {
    following = false;
    await follower;
    console.error(`KEDA end-to-end timings (ms from the load change): ${JSON.stringify(timings)}`);
    // KEDA puts a finalizer on each ScaledObject: delete them while it runs, or the namespace never goes away.
    for (const name of scaledObjects) {
      await kubeRequest(loop.sb.kc, soPath(name), { method: 'DELETE' }).catch(() => undefined);
      await waitFor(`ScaledObject ${name} to be gone`, 60_000, async () => {
        try {
          await kubeRequest(loop.sb.kc, soPath(name));
          return false;
        } catch (err) {
          return isStatus(err, 404);
        }
      }, 500).catch((err: unknown) => console.error(String(err)));
    }
    await keda?.stop();
    await loop?.stop();
    for (const e of exporters) await e.close();
  });

  const apps = () => loop.sb.kc.makeApiClient(AppsV1Api);
  const ns = () => loop.sb.namespace;
  const soPath = (name: string) => `/apis/keda.sh/v1alpha1/namespaces/${ns()}/scaledobjects/${name}`;

  async function specReplicas(target: string, ref: ResourceRef = Resources.deployment): Promise<number | undefined> {
    return specReplicasSchema.parse(await kubeRequest(loop.sb.kc, objectPath(ref, ns(), target))).spec.replicas;
  }

  /** Waits until the target's spec.replicas (a Deployment's unless `ref` says) is `n`; returns the ms since `since`. */
  async function waitForReplicas(target: string, n: number, since: number, ref: ResourceRef = Resources.deployment): Promise<number> {
    let last: number | undefined;
    try {
      await waitFor(`${ref.kind} ${target} spec.replicas = ${n}`, STEP_MS, async () => (last = await specReplicas(target, ref)) === n, 250);
    } catch (err) {
      throw new Error(`${err instanceof Error ? err.message : String(err)} (last: ${String(last)})\n${keda?.logTail(20) ?? ''}`, { cause: err });
    }
    return Date.now() - since;
  }

  /** Sets the target's total load and returns when it changed. */
  function setDemand(target: string, model: string, total: number, pods?: () => Promise<string[]>): number {
    demand.set(target, { model, total, pods: pods ?? demand.get(target)?.pods });
    return Date.now();
  }

  async function scaledObjectStatus(name: string) {
    return scaledObjectStatusSchema.parse(await kubeRequest(loop.sb.kc, soPath(name))).status;
  }

  /** KEDA's view is healthy: Ready, no fallback, no failed query, and no Warning on this ScaledObject or its HPA so far. */
  async function expectKedaHealthy(so: string, hpa: string): Promise<void> {
    // KEDA rewrites its conditions at times (briefly all Unknown, its initial set, with no reason): wait for
    // its scale loop's verdict rather than catching that instant. An error would be False, or Unknown with a reason.
    const status = await waitFor(`ScaledObject ${so} Ready=True`, 60_000, async () => {
      const s = await scaledObjectStatus(so);
      const ready = s?.conditions?.find((c) => c.type === 'Ready');
      expect(ready?.status === 'False' || (ready?.status === 'Unknown' && ready.reason)).toBeFalsy();
      return ready?.status === 'True' ? s : undefined;
    }, 500);
    const cond = (t: string) => status?.conditions?.find((c) => c.type === t);
    expect(cond('Fallback')?.status).not.toBe('True');
    for (const h of Object.values(status?.health ?? {})) expect(h).toMatchObject({ numberOfFailures: 0, status: 'Happy' });
    // The HPA's conditions can lag a scale it made by a sync (seen once: none yet right after a target reached 2
    // replicas), so wait for them too; ScalingActive=False fails at once.
    await waitFor(`HPA ${hpa} ScalingActive=True`, 60_000, async () => {
      const hpaStatus = hpaSchema.parse(await kubeRequest(loop.sb.kc, `/apis/autoscaling/v2/namespaces/${ns()}/horizontalpodautoscalers/${hpa}`)).status;
      const active = hpaStatus?.conditions?.find((c) => c.type === 'ScalingActive');
      expect(active?.status, `HPA ${hpa} ScalingActive: ${active?.reason ?? ''} ${active?.message ?? ''}`).not.toBe('False');
      return active?.status === 'True' ? true : undefined;
    }, 500);
    const events = eventListSchema.parse(await kubeRequest(loop.sb.kc, `/api/v1/namespaces/${ns()}/events`)).items;
    // This ScaledObject's and its HPA's own: the fallback test leaves Warnings on its objects on purpose.
    const own = (e: (typeof events)[number]) =>
      (e.involvedObject.kind === 'ScaledObject' && e.involvedObject.name === so) || (e.involvedObject.kind === 'HorizontalPodAutoscaler' && e.involvedObject.name === hpa);
    const warnings = events.filter((e) => e.type === 'Warning' && own(e));
    expect(warnings.map((e) => `${e.involvedObject.kind}/${e.involvedObject.name} ${e.reason}: ${e.message}`)).toEqual([]);
  }

  async function createScaledObject(so: ScaledObject, min: number, max: number): Promise<void> {
    const body = {
      ...so,
      spec: { ...so.spec, minReplicaCount: min, maxReplicaCount: max, advanced: { horizontalPodAutoscalerConfig: { behavior: BEHAVIOR } } },
    };
    await kubeRequest(loop.sb.kc, `/apis/keda.sh/v1alpha1/namespaces/${ns()}/scaledobjects`, { method: 'POST', body });
    scaledObjects.push(so.metadata.name);
    await waitFor(`ScaledObject ${so.metadata.name} Ready`, STEP_MS, async () => (await scaledObjectStatus(so.metadata.name))?.conditions?.find((c) => c.type === 'Ready')?.status === 'True', 500);
  }

  /**
   * Waits until the example's query answers `value` as KEDA asks it: KEDA's Prometheus scaler sends
   * the current time truncated to the second, so for up to a second after a series' first scrape it
   * sees nothing ("the result is empty") even though an instant query at `now` already has it.
   */
  async function waitForKedaView(so: ScaledObject, value: number): Promise<void> {
    const trigger = so.spec.triggers.find((t) => t.type === 'prometheus')!;
    let last: unknown;
    try {
      await waitFor(`${trigger.metadata.query} = ${value} at a whole second`, 60_000, async () => {
        const time = Math.floor(Date.now() / 1000);
        const r = await fetch(`${loop.prometheus.url}/api/v1/query?${new URLSearchParams({ query: trigger.metadata.query, time: String(time) }).toString()}`);
        last = await r.json();
        const result = vectorResultSchema.safeParse(last);
        return result.success && result.data.data.result.length === 1 && Number(result.data.data.result[0]!.value[1]) === value;
      }, 250);
    } catch (err) {
      throw new Error(`${err instanceof Error ? err.message : String(err)} (last answer: ${JSON.stringify(last)})`, { cause: err });
    }
  }

  it('load up → wva_desired_replicas → the ScaledObject’s HPA scales the Deployment up; load down → back down; through an ops-server rollout', async () => {
    const { sb } = loop;
    await createDeployment(sb, 'kd', 1);
    await createVA(sb, 'kd', { model: 'kd-model' });
    setDemand('kd', 'kd-model', 0.5);
    await loop.waitForVllmSeries('kd-model', 1);
    const so = exampleScaledObject('kd', 'kd', 'kd', sb.namespace, loop.prometheus.url);
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'kd' }, 1, 60_000);
    await waitForKedaView(so, 1);
    await createScaledObject(so, 1, 5);
    expect(await specReplicas('kd')).toBe(1);

    // Saturated (0.85 ≥ kvCacheThreshold 0.80): one more replica; spread over two pods (0.425 each) it holds.
    const up = setDemand('kd', 'kd-model', 0.85);
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'kd' }, 2, STEP_MS);
    timings['keda: load up → wva_desired_replicas 2 in Prometheus'] = Date.now() - up;
    timings['keda: load up → spec.replicas 2'] = await waitForReplicas('kd', 2, up);
    await expectKedaHealthy('kd', 'keda-hpa-kd');

    // The ops server rolls: a second process exports the same series, so Prometheus has two.
    exporters[1]!.serving = true;
    await waitFor('both exporters scraped', 30_000, async () => (await loop.scrapedCount('wva_desired_replicas', { variant_name: 'kd' })) === 2, 250);

    // Idle while both export: 0.1 per pod, safe to remove one (0.2 on one pod leaves 0.6 spare).
    const down = setDemand('kd', 'kd-model', 0.2);
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'kd' }, 1, STEP_MS);
    timings['keda: load down → wva_desired_replicas 1 in Prometheus'] = Date.now() - down;
    timings['keda: load down → spec.replicas 1'] = await waitForReplicas('kd', 1, down);
    await expectKedaHealthy('kd', 'keda-hpa-kd');

    // The old process goes away: its series go stale; KEDA keeps reading one element, the same value.
    exporters[0]!.serving = false;
    await waitFor('one exporter scraped', 30_000, async () => (await loop.scrapedCount('wva_desired_replicas', { variant_name: 'kd' })) === 1, 250);
    // Several HPA syncs (5 s each in the sandbox) after the rollout: replicas hold, KEDA stays healthy.
    const seen = new Set<number | undefined>();
    const until = Date.now() + 20_000;
    while (Date.now() < until) {
      seen.add(await specReplicas('kd'));
      await sleep(500);
    }
    expect([...seen]).toEqual([1]);
    await expectKedaHealthy('kd', 'keda-hpa-kd');
  }, 900_000);

  it('a plain HPA on the external metric KEDA’s metrics server serves follows the same decisions', async () => {
    const { sb } = loop;
    await createDeployment(sb, 'hp', 1);
    await createVA(sb, 'hp', { model: 'hp-model' });
    setDemand('hp', 'hp-model', 0.5);
    await loop.waitForVllmSeries('hp-model', 1);
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'hp' }, 1, 60_000);
    // KEDA's metrics server serves a metric only for a ScaledObject: this one carries the example's query
    // for `hp` and scales a placeholder Deployment of its own, pinned at 1; the plain HPA scales `hp`.
    await createDeployment(sb, 'hp-source', 1);
    const source = exampleScaledObject('hp-source', 'hp-source', 'hp', sb.namespace, loop.prometheus.url);
    await waitForKedaView(source, 1);
    await createScaledObject(source, 1, 1);
    const metricName = (await scaledObjectStatus('hp-source'))?.externalMetricNames?.[0];
    expect(metricName).toBeTruthy();
    await kubeRequest(sb.kc, `/apis/autoscaling/v2/namespaces/${sb.namespace}/horizontalpodautoscalers`, {
      method: 'POST',
      body: {
        apiVersion: 'autoscaling/v2',
        kind: 'HorizontalPodAutoscaler',
        metadata: { name: 'hp' },
        spec: {
          scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'hp' },
          minReplicas: 1,
          maxReplicas: 5,
          behavior: BEHAVIOR,
          metrics: [
            {
              type: 'External',
              external: {
                metric: { name: metricName, selector: { matchLabels: { 'scaledobject.keda.sh/name': 'hp-source' } } },
                target: { type: 'AverageValue', averageValue: '1' },
              },
            },
          ],
        },
      },
    });
    // The external metrics API answers the HPA's question itself, through the aggregator.
    const metricSchema = z.object({ items: z.array(z.object({ value: z.string() })) });
    // The decision is 1; KEDA may answer an error while it builds the scaler, but never another value.
    const reads: string[] = [];
    try {
      await waitFor('the external metric through the API server to read the decision, 1', 60_000, async () => {
        const m = metricSchema.safeParse(
          await kubeRequest(sb.kc, `/apis/external.metrics.k8s.io/v1beta1/namespaces/${sb.namespace}/${metricName}`, {
            query: { labelSelector: 'scaledobject.keda.sh/name=hp-source' },
          }).catch(() => undefined),
        );
        const value = m.success && m.data.items.length === 1 ? m.data.items[0]!.value : undefined;
        if (value !== undefined) reads.push(value);
        return value !== undefined && Number.parseFloat(value) === 1;
      }, 500);
    } catch (err) {
      const scraped = await loop.scraped('wva_desired_replicas', { variant_name: 'hp' });
      throw new Error(`${err instanceof Error ? err.message : String(err)} (values read: ${JSON.stringify(reads)}; in Prometheus now: ${String(scraped)})`, { cause: err });
    }
    expect(reads.map(Number.parseFloat)).toEqual(reads.map(() => 1));
    await waitFor('the HPA to read the metric', STEP_MS, async () => {
      const s = hpaSchema.parse(await kubeRequest(sb.kc, `/apis/autoscaling/v2/namespaces/${sb.namespace}/horizontalpodautoscalers/hp`)).status;
      return s?.conditions?.find((c) => c.type === 'ScalingActive')?.status === 'True';
    }, 500);

    const up = setDemand('hp', 'hp-model', 0.85);
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'hp' }, 2, STEP_MS);
    timings['hpa: load up → wva_desired_replicas 2 in Prometheus'] = Date.now() - up;
    timings['hpa: load up → spec.replicas 2'] = await waitForReplicas('hp', 2, up);

    const down = setDemand('hp', 'hp-model', 0.2);
    await waitForScraped(loop, 'wva_desired_replicas', { variant_name: 'hp' }, 1, STEP_MS);
    timings['hpa: load down → wva_desired_replicas 1 in Prometheus'] = Date.now() - down;
    timings['hpa: load down → spec.replicas 1'] = await waitForReplicas('hp', 1, down);
    await expectKedaHealthy('hp-source', 'hp');
    expect(await specReplicas('hp-source')).toBe(1);
  }, 900_000);

  it('no decision to read (no Ripple process scraped): KEDA holds the Deployment’s replicas, it does not scale to its minimum', async () => {
    const { sb } = loop;
    await createDeployment(sb, 'fb', 1);
    await createVA(sb, 'fb', { model: 'fb-model' });
    setDemand('fb', 'fb-model', 0.85);
    await loop.waitForVllmSeries('fb-model', 1);
    const so = exampleScaledObject('fb', 'fb', 'fb', sb.namespace, loop.prometheus.url);
    await waitForKedaView(so, 2);
    await createScaledObject(so, 1, 5);
    await waitForReplicas('fb', 2, Date.now());
    const deployment = async () => (await apps().readNamespacedDeployment({ name: 'fb', namespace: ns() })).metadata;
    // Any change of spec.replicas bumps metadata.generation: comparing it observes every change, not samples.
    await waitFor('fb to settle at 2 (observedGeneration caught up)', STEP_MS, async () => {
      const d = await apps().readNamespacedDeployment({ name: 'fb', namespace: ns() });
      return d.spec?.replicas === 2 && d.status?.observedGeneration === d.metadata?.generation;
    }, 250);
    const generation = (await deployment())?.generation;

    const serving = exporters.map((e) => e.serving);
    for (const e of exporters) e.serving = false;
    try {
      // KEDA's fallback after 3 failed polls (5 s apart): with the example's ignoreNullValues "false" an empty
      // answer is a failure, and behavior currentReplicas holds 2. KEDA's default would read 0 and scale to 1.
      await waitFor('the ScaledObject’s Fallback condition', STEP_MS, async () => (await scaledObjectStatus('fb'))?.conditions?.find((c) => c.type === 'Fallback')?.status === 'True', 500);
      // Several HPA syncs (5 s each in the sandbox) in fallback.
      await sleep(20_000);
      expect(await specReplicas('fb')).toBe(2);
      expect((await deployment())?.generation).toBe(generation);
    } finally {
      exporters.forEach((e, i) => (e.serving = serving[i]!));
    }
    await waitFor('the ScaledObject to leave its fallback', STEP_MS, async () => (await scaledObjectStatus('fb'))?.conditions?.find((c) => c.type === 'Fallback')?.status !== 'True', 500);
  }, 900_000);

  // Issue 31 item 4: the same loop for a ModelServing and a LeaderWorkerSet. The ScaledObject names the
  // target's apiVersion and kind; KEDA's HPA moves spec.replicas through the /scale subresource, whose pod
  // selector reconcile-modelserving writes (status.labelSelector, and the LeaderWorkerSet's hpaPodSelector).
  it('a ModelServing and a LeaderWorkerSet: load up → the ScaledObject’s HPA scales each through its scale subresource; the VA names the kind it resolved', async () => {
    const { sb } = loop;
    const lws = (name: string) => ({
      apiVersion: apiVersionOf(Resources.leaderWorkerSet),
      kind: 'LeaderWorkerSet',
      metadata: { name },
      // Two pods a group: the scale selector names the leader, the pod that serves (and reports) for its group.
      spec: { replicas: 1, leaderWorkerTemplate: { size: 2, workerTemplate: { spec: { containers: [{ name: 'vllm', image: 'vllm/vllm-openai:latest' }] } } } },
    });
    const targets = [
      { ref: Resources.modelServing, name: 'kms', body: msManifest('kms', sb.namespace, { replicas: 1 }) },
      { ref: Resources.leaderWorkerSet, name: 'klws', body: lws('klws') },
    ];
    await Promise.all(
      targets.map(async ({ ref, name, body }) => {
        const model = `${name}-model`;
        await kubeRequest(sb.kc, collectionPath(ref, sb.namespace), { method: 'POST', body });
        await createVA(sb, name, { kind: ref.kind, model });
        // The pods the target's /scale selects, as the autoscaler (and an HPA) count them.
        const pods = async () => {
          const selector = scaleSchema.parse(await kubeRequest(sb.kc, `${objectPath(ref, sb.namespace, name)}/scale`)).status?.selector;
          return selector ? runningPodsMatching(sb, selector) : [];
        };
        await waitFor(`one running pod selected by ${ref.kind} ${name}'s scale subresource`, STEP_MS, async () => (await pods()).length === 1, 500);
        setDemand(name, model, 0.5, pods);
        await loop.waitForVllmSeries(model, 1);
        const va = await waitForCondition(sb, name, 'TargetResolved', 'True', 'TargetFound', STEP_MS);
        expect(condition(va.status, 'TargetResolved')?.message).toBe(`Scale target ${ref.kind} ${name} found (scaled through its scale subresource)`);
        await waitForScraped(loop, 'wva_desired_replicas', { variant_name: name }, 1, STEP_MS);
        const so = exampleScaledObject(name, { apiVersion: apiVersionOf(ref), kind: ref.kind, name }, name, sb.namespace, loop.prometheus.url);
        await waitForKedaView(so, 1);
        await createScaledObject(so, 1, 3);
        expect(await specReplicas(name, ref)).toBe(1);

        const up = setDemand(name, model, 0.85);
        await waitForScraped(loop, 'wva_desired_replicas', { variant_name: name }, 2, STEP_MS);
        timings[`${ref.kind}: load up → spec.replicas 2`] = await waitForReplicas(name, 2, up, ref);
        await expectKedaHealthy(name, `keda-hpa-${name}`);
        // The new group's serving pod comes up and takes its share: the load spreads, and the decision holds.
        await waitFor(`two running pods selected by ${ref.kind} ${name}'s scale subresource`, STEP_MS, async () => (await pods()).length === 2, 500);
      }),
    );
  }, 900_000);
});
