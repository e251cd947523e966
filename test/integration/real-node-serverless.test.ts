import { AppsV1Api } from '@kubernetes/client-node';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Resources } from '../../kube/resources.js';
import { createLogger } from '../../base/log.js';
import { startKeda, type RunningKeda } from '../../sandbox/keda.js';
import { ListWatch } from '../../watcher/list-watch.js';
import { createMs, getMs, msManifest } from '../fixtures/modelserving-fixtures.js';
import { startPrometheus, type RunningPrometheus } from '../harness/prometheus.js';
import { RippleRelease } from '../harness/ripple-release.js';
import { openSandbox, waitFor, type TestSandbox } from '../harness/sandbox.js';

// Serverless with nothing but Kubernetes and KEDA (serverless.platform=kubernetes), on the real node: each function
// a Deployment running `ripple serve` behind a Service, scaled between 0 and 3 by KEDA (built from the Go module
// proxy) on its queue's waiting work, which a real Prometheus scrapes from the ops pod. The dispatcher holds a
// function's jobs while its Service has no ready endpoint (--hold-until-ready): the queue plays the part of
// Knative's activator. Short KEDA polling and cooldown keep the file within a few minutes.
const FUNCTIONS = ['reconcile-modelserving', 'reconcile-autoscaler', 'ops-lifecycle', 'emit-events'];
const MS = 'reconcile-modelserving';

describe('serverless on plain Kubernetes + KEDA, on the real node', () => {
  let sb: TestSandbox;
  let release: RippleRelease;
  let prometheus: RunningPrometheus;
  let keda: RunningKeda;
  let deployments: ListWatch | undefined;
  /** The most replicas each function's Deployment asked for, from every watch event since before KEDA could act. */
  const mostReplicas = new Map<string, number>();
  const apps = () => sb.kc.makeApiClient(AppsV1Api);
  const deployment = (fn: string) => release.object(fn);
  const scale = async (fn: string) => {
    const d = await apps().readNamespacedDeployment({ name: deployment(fn), namespace: sb.namespace });
    return { spec: d.spec?.replicas ?? 0, ready: d.status?.readyReplicas ?? 0 };
  };
  const functionPods = async (fn: string) =>
    (await sb.core.listNamespacedPod({ namespace: sb.namespace, labelSelector: `app.kubernetes.io/component=function,ripple.dev/function=${fn}` })).items;
  const queueDepth = async (fn: string) => {
    const body = await prometheus.query(`sum(max by (state) (bullmq_job_count{queue="${fn}",state=~"waiting|prioritized|active"}))`);
    return JSON.stringify(body).match(/"value":\[[^,]+,"([^"]+)"\]/)?.[1];
  };
  const values = (prometheusAddress: string) => ({
    mode: 'serverless',
    functionToken: { value: 'function-token-for-the-real-node-test' },
    watcher: { replicas: 1 },
    ops: { replicas: 1 },
    serverless: {
      platform: 'kubernetes',
      // One reconcile at a time through the one dispatcher: a burst is a queue one function pod cannot keep empty.
      dispatcher: { replicas: 1, extraEnv: [{ name: 'MODELSERVING_CONCURRENCY', value: '1' }] },
      functions: { minScale: 0, maxScale: 3 },
      kubernetes: { prometheusAddress, threshold: 2, pollingInterval: 1, cooldownPeriod: 8, scaleDownStabilizationSeconds: 5 },
    },
  });

  beforeAll(async () => {
    sb = await openSandbox('rn-serverless');
    release = await RippleRelease.prepare(sb, 'sl');
    keda = await startKeda({ kubeconfig: inject('kubeconfig'), watchNamespaces: [sb.namespace] });
    // Prometheus scrapes the ops pod by its IP, which exists only once installed: install with an address nothing
    // answers (KEDA keeps every function at its 0), then point the ScaledObjects at Prometheus (the pods stay).
    release.install(values('http://127.0.0.1:9'));
    const ops = (await sb.core.listNamespacedPod({ namespace: sb.namespace, labelSelector: 'app.kubernetes.io/component=ops' })).items;
    prometheus = await startPrometheus({ targets: [], rippleTargets: ops.map((p) => `${p.status?.podIP}:8081`) });
    await prometheus.waitForTargetsUp(60_000);
    deployments = new ListWatch({
      kc: sb.kc,
      resource: Resources.deployment,
      namespace: sb.namespace,
      labelSelector: 'app.kubernetes.io/component=function',
      log: createLogger('real-node-serverless', 'warn'),
      onEvent: async (e) => {
        const fn = e.object.metadata.labels?.['ripple.dev/function'];
        const replicas = (e.object as { spec?: { replicas?: number } }).spec?.replicas ?? 0;
        if (fn) mostReplicas.set(fn, Math.max(mostReplicas.get(fn) ?? 0, replicas));
      },
    });
    await deployments.waitForSync();
    release.install(values(prometheus.url));
  }, 900_000);
  afterAll(async () => {
    await deployments?.stop();
    await release?.uninstall();
    await keda?.stop();
    await prometheus?.stop();
    await sb?.cleanup();
  });

  it('every function scales to zero after idle', async () => {
    const started = Date.now();
    // The leader's first resync tick is a waiting job in every queue, held by the dispatcher: once KEDA reads the
    // queues, it wakes each function. With nothing else to do, each goes back to zero and stays there (later ticks
    // run in the dispatcher while it holds, and enqueue nothing).
    await waitFor('every function Deployment woken by its waiting work, then back at 0 replicas with no pod left', 240_000, async () => {
      for (const fn of FUNCTIONS) if ((mostReplicas.get(fn) ?? 0) < 1 || (await scale(fn)).spec !== 0 || (await functionPods(fn)).length > 0) return undefined;
      return true;
    }, 1_000);
    for (const fn of FUNCTIONS) expect(mostReplicas.get(fn), fn).toBeGreaterThanOrEqual(1);
    console.log(`real-node serverless: every function at zero ${((Date.now() - started) / 1000).toFixed(1)} s after install (cooldown 8 s)`);
  }, 300_000);

  it('a new ModelServing brings reconcile-modelserving up from zero and is reconciled, spending no retry while the pod starts', async () => {
    expect((await scale(MS)).spec).toBe(0);
    // Every command Redis runs, scripts' included, from here on: a failure counted for any modelserving key (a retry
    // spent while the function had no pod) would show as an HINCRBY on its failures hash.
    const monitorClient = new Redis(release.redis.url, { password: release.redisPassword });
    const monitor = await monitorClient.monitor();
    const failuresCounted: string[] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args[0]?.toLowerCase() === 'hincrby' && args[1]?.includes(MS) && args[1].endsWith(':ripple:failures')) failuresCounted.push(args[2] ?? '');
    });
    try {
      const names = ['cold-a', 'cold-b', 'cold-c'];
      const created = Date.now();
      for (const n of names) await createMs(sb, msManifest(n, sb.namespace, { replicas: 0 }));
      let firstReady: number | undefined;
      for (const n of names) {
        await waitFor(`${n} reconciled through a function pod started from zero`, 180_000, async () => {
          if (firstReady === undefined && (await scale(MS)).ready > 0) firstReady = Date.now();
          const ms = await getMs(sb, n);
          return ms?.status?.observedGeneration === ms?.metadata.generation ? true : undefined;
        }, 250);
      }
      const reconciled = Date.now() - created;
      const pods = await functionPods(MS);
      expect(pods.some((p) => p.spec?.nodeName === 'ripple-real-node' && p.status?.containerStatuses?.[0]?.ready)).toBe(true);
      expect(failuresCounted, 'failures counted while the function scaled up from zero').toEqual([]);
      console.log(
        `real-node serverless: 0 → ready reconcile-modelserving pod ${firstReady ? ((firstReady - created) / 1000).toFixed(1) : '?'} s after the first create; all ${names.length} reconciled ${(reconciled / 1000).toFixed(1)} s after it, no retry spent`,
      );
    } finally {
      monitorClient.disconnect();
      monitor.disconnect();
    }
  }, 300_000);

  it('a burst scales reconcile-modelserving out beyond one pod, and back to zero once its queue has drained', async () => {
    // From zero, so that the pods counted below are the burst's (the previous test leaves one running for a while).
    await waitFor('reconcile-modelserving at zero before the burst', 180_000, async () => ((await scale(MS)).spec === 0 && (await functionPods(MS)).length === 0 ? true : undefined), 1_000);
    const started = Date.now();
    const names = Array.from({ length: 120 }, (_, i) => `burst-${i}`);
    await Promise.all(
      Array.from({ length: 8 }, async (_, lane) => {
        for (let i = lane; i < names.length; i += 8) await createMs(sb, msManifest(names[i] ?? '', sb.namespace, { replicas: 0 }));
      }),
    );
    let most = 0;
    await waitFor('KEDA to scale reconcile-modelserving out to 2 or more ready pods', 180_000, async () => {
      most = Math.max(most, (await scale(MS)).ready);
      return most >= 2 ? true : undefined;
    }, 500);
    const out = Date.now() - started;
    // Every object reconciled, then the queue empty: Prometheus's depth alone may still be a scrape from before the burst.
    const drained = await waitFor('every ModelServing of the burst reconciled and the queue drained', 300_000, async () => {
      for (const n of names) {
        const ms = await getMs(sb, n);
        if (ms?.status?.observedGeneration !== ms?.metadata.generation) return undefined;
      }
      return (await queueDepth(MS)) === '0' ? Date.now() : undefined;
    }, 1_000);
    await waitFor('reconcile-modelserving back at zero', 180_000, async () => ((await scale(MS)).spec === 0 && (await functionPods(MS)).length === 0 ? true : undefined), 1_000);
    console.log(
      `real-node serverless: ${names.length} ModelServings → ${most} ready reconcile-modelserving pods ${(out / 1000).toFixed(1)} s after the burst began; back to 0 ${((Date.now() - drained) / 1000).toFixed(1)} s after the queue drained`,
    );
  }, 600_000);
});
