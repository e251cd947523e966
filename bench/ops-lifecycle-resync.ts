// The API cost of ops-lifecycle's periodic resync (issue 15 scenario 7): N controlled pods (default 1000, created
// with nodeName set so the scheduler is not in the way; KWOK runs them) settle into ServiceAvailable, then the
// resync tick's own code path (FunctionHost.resync) enqueues every controlled pod and the workers reconcile each
// one. Reports what bringing the pods to ServiceAvailable cost (event-woken reconciles: requests by verb and how
// many reconciles planned from the pod cache), then, per resync: API requests of this process by verb (every request Ripple makes goes through
// `https.request`; the benchmark's own requests are tagged and left out), requests per 1,000 pods, the API
// server's own count for pods (apiserver_request_total, any client), wall time, and CPU seconds of this process
// (watcher + workers), and how many reconciles planned from the workers' watched pod cache.
//
// Not a test: `npm run bench -- ops-lifecycle-resync`. Use a sandbox of its own, e.g.
// RIPPLE_SANDBOX_DIR=/work/main/.sandbox-ops. Env: BENCH_PODS (1000), BENCH_ROUNDS (3).
// Results: bench/results/ops-lifecycle-resync.{json,md}.
import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdirSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { withLifecycle } from '../functions/ops-lifecycle/client/index.js';
import { definition as opsLifecycle, OPS_LIFECYCLE } from '../functions/ops-lifecycle/definition.js';
import { controlledPodCacheHits, stopControlledPodCaches } from '../functions/ops-lifecycle/pod-access/pod-cache.js';
import { Label } from '../functions/ops-lifecycle/protocol/index.js';
import { loadKubeConfig } from '../kube/config.js';
import { kubeRequestText } from '../kube/raw.js';
import { FunctionHost } from '../runtime/host.js';
import { createLogger } from '../base/log.js';
import { startControlPlane } from '../sandbox/control-plane.js';
import { startRedis } from '../sandbox/redis.js';
import { Watcher } from '../watcher/watcher.js';
import { nowMs, round } from './stats.js';
import { requestVerb, type RequestVerb } from './fixtures/request-verb.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const PODS = Number(process.env.BENCH_PODS ?? 1000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const IMAGE = 'registry.k8s.io/pause:3.10';

// ---------------------------------------------------------------------------------------------
// Request counting: every API request of this process that the benchmark did not make itself.

const bench = new AsyncLocalStorage<true>();
let counts: Record<RequestVerb, number> = fresh();
function fresh(): Record<RequestVerb, number> {
  return { get: 0, list: 0, watch: 0, create: 0, patch: 0, update: 0, delete: 0 };
}

const originalRequest = https.request;
(https as { request: typeof https.request }).request = function counted(this: unknown, ...args: Parameters<typeof https.request>) {
  const first: unknown = args[0];
  if (bench.getStore() === undefined && typeof first === 'object' && first !== null && !(first instanceof URL)) {
    const opts = first as https.RequestOptions;
    counts[requestVerb(opts.method ?? 'GET', opts.path ?? '')]++;
  }
  return originalRequest.apply(this, args);
} as typeof https.request;

const total = (c: Record<RequestVerb, number>) => Object.values(c).reduce((n, v) => n + v, 0);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The API server's count of requests on pods (and pods/status), by verb, whichever client sent them. */
async function apiserverPodRequests(kc: KubeConfig): Promise<Record<string, number>> {
  const metrics = await bench.run(true, () => kubeRequestText(kc, '/metrics'));
  const out: Record<string, number> = {};
  for (const line of metrics.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (labels.resource !== 'pods') continue;
    const key = `${labels.verb ?? ''} pods${labels.subresource ? `/${labels.subresource}` : ''}`;
    out[key] = (out[key] ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return out;
}

function delta(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) if (v - (before[k] ?? 0) > 0) out[k] = v - (before[k] ?? 0);
  return out;
}

async function createPods(core: CoreV1Api, namespace: string, nodes: string[]): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < PODS) {
      const i = next++;
      const body = withLifecycle<V1Pod>({
        metadata: { name: `p-${i}`, labels: { app: 'bench' } },
        spec: { nodeName: nodes[i % nodes.length], containers: [{ name: 'main', image: IMAGE }] },
      });
      await bench.run(true, () => core.createNamespacedPod({ namespace, body }));
    }
  };
  await Promise.all(Array.from({ length: 16 }, lane));
}

async function countAvailable(core: CoreV1Api, namespace: string): Promise<number> {
  const list = await bench.run(true, () => core.listNamespacedPod({ namespace }));
  return list.items.filter((p) => p.metadata?.labels?.[Label.serviceAvailable] !== undefined).length;
}

/** Until `busy` has stayed false for `quietMs` (the queue drained and no request went out). */
async function waitQuiet(host: FunctionHost, quietMs: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = total(counts);
  let quietSince = Date.now();
  while (Date.now() < deadline) {
    await sleep(200);
    const now = total(counts);
    const depth = await host.queue(OPS_LIFECYCLE).depth();
    if (now !== last || depth > 0) {
      last = now;
      quietSince = Date.now();
    } else if (Date.now() - quietSince >= quietMs) return;
  }
  throw new Error(`still busy after ${timeoutMs} ms`);
}

const controlPlane = await startControlPlane({ log: (l) => console.log(l) });
const redis = await startRedis();
const log = createLogger('bench-ops-lifecycle-resync', process.env.LOG_LEVEL ?? 'warn');
try {
  const kc = loadKubeConfig({ kind: 'kubeconfig', path: controlPlane.kubeconfig });
  const core = kc.makeApiClient(CoreV1Api);
  const namespace = `bench-opslc-${Date.now().toString(36)}`;
  await bench.run(true, () => core.createNamespace({ body: { metadata: { name: namespace } } }));
  const nodes = (await bench.run(true, () => core.listNode())).items.map((n) => n.metadata?.name ?? '').filter((n) => n !== '');
  if (nodes.length === 0) throw new Error('no nodes in the sandbox');

  const fn = opsLifecycle({});
  const host = new FunctionHost({ kc, redisUrl: redis.url, prefix: `bench-${namespace}`, functions: [fn], log, env: process.env, namespace });
  const watcher = new Watcher({ kc, functions: [fn], enqueue: async (f, key, reason) => void (await host.enqueue(f, key, reason)), isLeader: () => true, log, namespace });
  host.startWorkers();
  watcher.start();
  await watcher.waitForSync(60_000);

  const t0 = nowMs();
  counts = fresh();
  const settleHitsBefore = controlledPodCacheHits();
  await createPods(core, namespace, nodes);
  console.log(`created ${PODS} controlled pods in ${round((nowMs() - t0) / 1000, 1)} s`);
  const settleDeadline = Date.now() + 15 * 60_000;
  while ((await countAvailable(core, namespace)) < PODS) {
    if (Date.now() > settleDeadline) throw new Error('pods did not become ServiceAvailable');
    await sleep(2_000);
  }
  await waitQuiet(host, 3_000, 5 * 60_000);
  // Every reconcile so far was woken by an event (the pods' creation, KWOK's status writes, the lifecycle's own).
  const settle = { seconds: round((nowMs() - t0) / 1000, 1), requests: { ...counts }, cacheHits: controlledPodCacheHits() - settleHitsBefore };
  console.log(`all ${PODS} ServiceAvailable: ${JSON.stringify(settle)}`);

  const rounds = [];
  for (let r = 0; r < ROUNDS; r++) {
    const before = await apiserverPodRequests(kc);
    counts = fresh();
    const cpu = process.cpuUsage();
    const hitsBefore = controlledPodCacheHits();
    const start = nowMs();
    const enqueued = await host.resync(OPS_LIFECYCLE);
    await waitQuiet(host, 2_000, 10 * 60_000);
    const seconds = round((nowMs() - start - 2_000) / 1000, 2); // the quiet period is not work
    const usage = process.cpuUsage(cpu);
    const after = await apiserverPodRequests(kc);
    const requests = { ...counts };
    const row = {
      enqueued,
      seconds,
      cpuSeconds: round((usage.user + usage.system) / 1e6, 2),
      requests,
      requestsPer1000Pods: round((total(requests) * 1000) / PODS, 1),
      // Reconciles that planned from the workers' watched cache of controlled pods (pod-access/pod-cache.ts).
      cacheHits: controlledPodCacheHits() - hitsBefore,
      apiserverPods: delta(before, after),
    };
    rounds.push(row);
    console.log(`round ${r + 1}: ${JSON.stringify(row)}`);
  }
  await watcher.stop();
  await host.close();
  // The workers' pod cache watches until it idles out.
  await stopControlledPodCaches();
  await bench.run(true, () => core.deleteNamespace({ name: namespace }));

  const result = { pods: PODS, settle, rounds, node: process.version, date: new Date().toISOString() };
  const dir = path.join(here, 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'ops-lifecycle-resync.json'), `${JSON.stringify(result, null, 2)}\n`);
  const md = [
    `# ops-lifecycle resync: API cost per ${PODS} controlled pods`,
    '',
    `Bringing the ${PODS} new pods to ServiceAvailable (event-woken reconciles): ${settle.seconds} s, GET ${settle.requests.get}, ` +
      `LIST ${settle.requests.list}, PATCH ${settle.requests.patch}, other ${total(settle.requests) - settle.requests.get - settle.requests.list - settle.requests.patch}; ` +
      `${settle.cacheHits} reconciles planned from the pod cache.`,
    '',
    '| round | pods enqueued | seconds | CPU s (process) | GET | LIST | PATCH | other | requests per 1,000 pods | served from the pod cache | API server, pods (any client) |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rounds.map(
      (x, i) =>
        `| ${i + 1} | ${x.enqueued} | ${x.seconds} | ${x.cpuSeconds} | ${x.requests.get} | ${x.requests.list} | ${x.requests.patch} | ${total(x.requests) - x.requests.get - x.requests.list - x.requests.patch} | ${x.requestsPer1000Pods} | ${x.cacheHits} | ${Object.entries(x.apiserverPods).map(([k, v]) => `${k}: ${v}`).join(', ')} |`,
    ),
    '',
  ].join('\n');
  writeFileSync(path.join(dir, 'ops-lifecycle-resync.md'), md);
  console.log(md);
} finally {
  await redis.stop();
  await controlPlane.stop();
}
