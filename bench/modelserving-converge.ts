// Converge 20 ModelServings (2 ServingGroups × 2 roles × 1 entry + 1 worker each: 8 pods and 4
// headless Services per ModelServing) to Available on the sandbox with Ripple's watcher and workers
// running in this process, beside a baseline that creates the same 160 pods and 80 Services directly
// with the same client concurrency and waits for the pods to be Ready (the floor: no controller can
// do it with fewer writes). Reports time to converge, the ratio, and API requests per converged
// ModelServing, counted on this process's HTTPS client (every API request Ripple makes goes through
// `https.request`; the benchmark's own requests are tagged and left out).
//
// Not a test: `npm run bench` (or `npm run bench -- modelserving-converge`). Results:
// bench/results/modelserving-converge.{json,md}. Env: BENCH_MS (20), BENCH_ROUNDS (2),
// BENCH_KTHENA_BIN (a kthena-controller-manager built by hand, bench/README.md: run as a third side).
import { AsyncLocalStorage } from 'node:async_hooks';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { CoreV1Api, Watch, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { Redis } from 'ioredis';
import { definition as emitEvents } from '../functions/emit-events/definition.js';
import { definition as modelServing } from '../functions/reconcile-modelserving/definition.js';
import { lateEnqueuesTotal, stopChildrenCaches } from '../functions/reconcile-modelserving/children-cache.js';
import { modelServingConfig } from '../functions/reconcile-modelserving/config.js';
import { loadKubeConfig } from '../kube/config.js';
import { kubeRequest, kubeRequestText } from '../kube/raw.js';
import { collectionPath, Resources } from '../kube/resources.js';
import { FunctionHost } from '../runtime/host.js';
import { createLogger } from '../base/log.js';
import { startControlPlane } from '../sandbox/control-plane.js';
import { startRedis } from '../sandbox/redis.js';
import { Watcher } from '../watcher/watcher.js';
import { baselineCheckout } from './baseline.js';
import { componentsCpu, componentsCpuBetween, cpuSeconds, sandboxComponents } from './scale/procstat.js';
import { requestVerb, type RequestVerb } from './fixtures/request-verb.js';
import { nowMs, round } from './stats.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const COUNT = Number(process.env.BENCH_MS ?? 20);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const GROUPS = 2;
const ROLES = ['prefill', 'decode'];
const IMAGE = 'registry.k8s.io/pause:3.10';
const config = modelServingConfig(process.env);
/**
 * BENCH_BASELINE_REF=<commit>: also run Ripple as it was at that commit (its checkout beside this one,
 * bench/baseline.ts), in the same rounds, so before and after are measured side by side.
 */
const BEFORE_REF = process.env.BENCH_BASELINE_REF;
/**
 * BENCH_KTHENA_BIN=<path>: also converge the same ModelServings with Kthena's own controller, in the same
 * rounds. Neither its binary nor its build belongs to this repository (bench/README.md says how to build one).
 */
const KTHENA_BIN = process.env.BENCH_KTHENA_BIN;

/** What the Ripple side runs: this checkout's modules, or the same modules from the BENCH_BASELINE_REF checkout. */
interface RippleModules {
  modelServing: typeof modelServing;
  emitEvents: typeof emitEvents;
  FunctionHost: typeof FunctionHost;
  Watcher: typeof Watcher;
  /** That checkout's worker-local caches (children-cache.ts): their watches outlive the side until stopped. */
  lateEnqueuesTotal: typeof lateEnqueuesTotal;
  stopChildrenCaches: typeof stopChildrenCaches;
}
const current: RippleModules = { modelServing, emitEvents, FunctionHost, Watcher, lateEnqueuesTotal, stopChildrenCaches };

async function modulesAt(root: string): Promise<RippleModules> {
  const load = (file: string) => import(pathToFileURL(path.join(root, file)).href);
  const [ms, ee, host, watcher, caches] = await Promise.all([
    load('functions/reconcile-modelserving/definition.ts'),
    load('functions/emit-events/definition.ts'),
    load('runtime/host.ts'),
    load('watcher/watcher.ts'),
    load('functions/reconcile-modelserving/children-cache.ts').catch(() => ({})),
  ]);
  // The same exports at another commit: their shapes are this checkout's as far as the benchmark uses them. A
  // commit from before the children cache has none to stop.
  return {
    modelServing: ms.definition,
    emitEvents: ee.definition,
    FunctionHost: host.FunctionHost,
    Watcher: watcher.Watcher,
    lateEnqueuesTotal: caches.lateEnqueuesTotal ?? (() => 0),
    stopChildrenCaches: caches.stopChildrenCaches ?? (async () => undefined),
  } as RippleModules;
}
// Ripple's most requests in flight: reconciles per worker × requests per reconcile's stage.
const CLIENT_CONCURRENCY = config.MODELSERVING_CONCURRENCY * config.MODELSERVING_APPLY_CONCURRENCY;

// ---------------------------------------------------------------------------------------------
// Request counting: every API request of this process, by who made it and what kind it was.

const who = new AsyncLocalStorage<'bench'>();
type Kind = RequestVerb | 'event';
let counts: Record<Kind, number> = fresh();
function fresh(): Record<Kind, number> {
  return { get: 0, list: 0, watch: 0, create: 0, patch: 0, update: 0, delete: 0, event: 0 };
}

function classify(method: string, pathAndQuery: string): Kind {
  if (/\/events(\/|$)/.test(pathAndQuery.split('?')[0] ?? '')) return 'event';
  return requestVerb(method, pathAndQuery);
}

/** Requests by method and path shape (names and namespaces elided), to tell which GETs and LISTs a converge makes. */
let byShape: Record<string, number> = {};
function requestShape(method: string, pathAndQuery: string): string {
  const [p = '', q = ''] = pathAndQuery.split('?');
  const segments = p.split('/').filter(Boolean);
  const shaped = segments.map((seg, i) => (segments[i - 1] === 'namespaces' ? '{ns}' : i > 0 && /^(ms\d+|ms\d+-.+)$/.test(seg) ? '{name}' : seg));
  const query = q
    .split('&')
    .map((kv) => kv.split('=')[0])
    .filter((k) => k === 'labelSelector' || k === 'watch' || k === 'fieldSelector');
  return `${method} /${shaped.join('/')}${query.length ? `?${query.join('&')}` : ''}`;
}

/**
 * BENCH_CPU_PROFILE=<file>: a V8 CPU profile of the current Ripple side's converge only (first create →
 * converged), written as a .cpuprofile (the first round's; Chrome DevTools or speedscope read it).
 */
const PROFILE_FILE = process.env.BENCH_CPU_PROFILE;
let profiled = false;
async function startProfile(): Promise<Session | undefined> {
  if (!PROFILE_FILE || profiled) return undefined;
  profiled = true;
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 500 });
  await session.post('Profiler.start');
  return session;
}
async function stopProfile(session: Session | undefined): Promise<void> {
  if (!session || !PROFILE_FILE) return;
  const { profile } = await session.post('Profiler.stop');
  writeFileSync(PROFILE_FILE, JSON.stringify(profile));
  session.disconnect();
}

const originalRequest = https.request;
(https as { request: typeof https.request }).request = function counted(this: unknown, ...args: Parameters<typeof https.request>) {
  // kube/raw.ts and kube/watch-stream.ts call request(options) with an options object. client-node 2.x's typed
  // clients send through undici instead and are not counted here: the ModelServing path does not use them.
  const first: unknown = args[0];
  if (who.getStore() === undefined && typeof first === 'object' && first !== null && !(first instanceof URL)) {
    const opts = first as https.RequestOptions;
    const kind = classify(opts.method ?? 'GET', opts.path ?? '');
    counts[kind]++;
    if (kind !== 'event') {
      const key = requestShape(opts.method ?? 'GET', opts.path ?? '');
      byShape[key] = (byShape[key] ?? 0) + 1;
    }
  }
  return originalRequest.apply(this, args);
} as typeof https.request;

const total = (c: Record<Kind, number>, withEvents = false) =>
  Object.entries(c).reduce((n, [k, v]) => n + (k === 'event' && !withEvents ? 0 : v), 0);

/** CPU seconds (user + system) this process spent since `from` (process.cpuUsage). */
const cpuSince = (from: NodeJS.CpuUsage) => {
  const d = process.cpuUsage(from);
  return round((d.user + d.system) / 1e6, 2);
};

// ---------------------------------------------------------------------------------------------
// The API server's own count of requests (`apiserver_request_total` on its /metrics): what a steady
// resync writes is read there, so a write made by any client (not only this process's) counts.

const WRITE_VERBS = new Set(['POST', 'PUT', 'PATCH', 'DELETE', 'APPLY']);
/** Resources Ripple's ModelServing path writes (the control plane's own lease renewals are left out). */
const RIPPLE_RESOURCES = new Set(['pods', 'services', 'controllerrevisions', 'podgroups', 'modelservings', 'events']);

async function apiserverWrites(kc: KubeConfig): Promise<Record<string, number>> {
  const metrics = await who.run('bench', () => kubeRequestText(kc, '/metrics'));
  const out: Record<string, number> = {};
  for (const line of metrics.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    const verb = labels.verb ?? '';
    const resource = labels.resource ?? '';
    if (!WRITE_VERBS.has(verb) || !RIPPLE_RESOURCES.has(resource)) continue;
    const key = `${verb} ${resource}${labels.subresource ? `/${labels.subresource}` : ''}`;
    out[key] = (out[key] ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return out;
}

const sumOf = (writes: Record<string, number>) => Object.values(writes).reduce((n, v) => n + v, 0);

function writesBetween(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) {
    const d = v - (before[k] ?? 0);
    if (d > 0) out[k] = d;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

function podsOf(namespace: string, ms: string): V1Pod[] {
  const out: V1Pod[] = [];
  for (let g = 0; g < GROUPS; g++) {
    for (const role of ROLES) {
      for (let i = 0; i < 2; i++) {
        const group = `${ms}-${g}`;
        out.push({
          metadata: {
            name: `${group}-${role}-0-${i}`,
            namespace,
            labels: {
              'modelserving.volcano.sh/name': ms,
              'modelserving.volcano.sh/group-name': group,
              'modelserving.volcano.sh/role': role,
              'modelserving.volcano.sh/role-id': `${role}-0`,
              ...(i === 0 ? { 'modelserving.volcano.sh/entry': 'true' } : {}),
            },
          },
          spec: {
            containers: [
              {
                name: 'main',
                image: IMAGE,
                env: [
                  { name: 'GROUP_SIZE', value: '2' },
                  { name: 'ENTRY_ADDRESS', value: `${group}-${role}-0-0.${namespace}` },
                  { name: 'WORKER_INDEX', value: String(i) },
                ],
              },
            ],
          },
        });
      }
    }
  }
  return out;
}

function manifest(namespace: string, name: string): Record<string, unknown> {
  const tpl = { spec: { containers: [{ name: 'main', image: IMAGE }] } };
  return {
    apiVersion: 'workload.serving.volcano.sh/v1alpha1',
    kind: 'ModelServing',
    metadata: { name, namespace },
    spec: { replicas: GROUPS, template: { roles: ROLES.map((r) => ({ name: r, replicas: 1, workerReplicas: 1, entryTemplate: tpl, workerTemplate: tpl })) } },
  };
}

async function bounded<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

async function withNamespace<T>(kc: KubeConfig, prefix: string, fn: (ns: string) => Promise<T>): Promise<T> {
  const core = kc.makeApiClient(CoreV1Api);
  const ns = `${prefix}-${Date.now().toString(36)}`;
  await who.run('bench', async () => {
    await core.createNamespace({ body: { metadata: { name: ns } } });
    // Pods need the namespace's default ServiceAccount (kube-controller-manager creates it).
    for (;;) {
      try {
        await core.readNamespacedServiceAccount({ name: 'default', namespace: ns });
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  });
  try {
    return await fn(ns);
  } finally {
    // Wait until the namespace is gone: its teardown (the namespace controller deleting every pod)
    // would otherwise load the machine during the next measurement and count in its API writes.
    await who.run('bench', async () => {
      await core.deleteNamespace({ name: ns }).catch(() => undefined);
      for (let waited = 0; waited < 120_000; waited += 500) {
        try {
          await core.readNamespace({ name: ns });
        } catch {
          return;
        }
        await new Promise((r) => setTimeout(r, 500));
      }
    });
  }
}

/**
 * Resolves when `done` holds for the objects a watch reports (started before anything is created). A
 * watch the server or the network ends is started again: a fresh watch replays every object as ADDED,
 * so a dropped stream can delay the measurement by a reconnect but never hang the benchmark.
 */
async function watchUntil(kc: KubeConfig, watchPath: string, done: (objects: Map<string, Record<string, unknown>>) => boolean) {
  const objects = new Map<string, Record<string, unknown>>();
  let resolve!: () => void;
  let settled = false;
  const finished = new Promise<void>((r) => (resolve = () => ((settled = true), r())));
  let current: AbortController | undefined;
  const start = async (): Promise<void> => {
    current = await who.run('bench', () =>
      new Watch(kc).watch(
        watchPath,
        {},
        (type: string, obj: Record<string, unknown>) => {
          const name = (obj.metadata as { name?: string } | undefined)?.name ?? '';
          if (type === 'DELETED') objects.delete(name);
          else objects.set(name, obj);
          if (done(objects)) resolve();
        },
        () => {
          if (!settled) setTimeout(() => void start(), 200);
        },
      ),
    );
  };
  await start();
  return { finished, stop: () => current?.abort() };
}

function podReady(obj: Record<string, unknown>): boolean {
  const status = obj.status as { phase?: string; conditions?: Array<{ type: string; status: string }> } | undefined;
  return status?.phase === 'Running' && status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
}

function msAvailable(obj: Record<string, unknown>): boolean {
  const meta = obj.metadata as { generation?: number };
  const status = obj.status as { observedGeneration?: number; availableReplicas?: number; replicas?: number; conditions?: Array<{ type: string; status: string }> } | undefined;
  return (
    status?.observedGeneration === meta.generation &&
    status?.availableReplicas === GROUPS &&
    status.replicas === GROUPS &&
    status.conditions?.some((c) => c.type === 'Available' && c.status === 'True') === true
  );
}

/** The COUNT ModelServings of a controller's side, created with the client concurrency the floor uses. */
async function createModelServings(kc: KubeConfig, ns: string): Promise<void> {
  const names = Array.from({ length: COUNT }, (_, i) => `ms${i}`);
  await who.run('bench', () =>
    bounded(names, CLIENT_CONCURRENCY, async (n) => void (await kubeRequest(kc, collectionPath(Resources.modelServing, ns), { method: 'POST', body: manifest(ns, n) }))),
  );
}

/** Ends when all COUNT ModelServings in `ns` are Available (msAvailable), whichever controller made them so. */
function watchAllAvailable(kc: KubeConfig, ns: string) {
  return watchUntil(kc, `/apis/workload.serving.volcano.sh/v1alpha1/namespaces/${ns}/modelservings`, (objs) => objs.size === COUNT && [...objs.values()].every(msAvailable));
}

async function baseline(kc: KubeConfig) {
  return withNamespace(kc, 'bench-ms-base', async (ns) => {
    const names = Array.from({ length: COUNT }, (_, i) => `ms${i}`);
    const pods = names.flatMap((n) => podsOf(ns, n));
    const services = names.flatMap((n) =>
      Array.from({ length: GROUPS }, (_, g) =>
        ROLES.map((role) => ({
          metadata: { name: `${n}-${g}-${role}-0-0`, namespace: ns, labels: { 'modelserving.volcano.sh/name': n } },
          spec: {
            clusterIP: 'None',
            publishNotReadyAddresses: true,
            selector: { 'modelserving.volcano.sh/group-name': `${n}-${g}`, 'modelserving.volcano.sh/role': role, 'modelserving.volcano.sh/entry': 'true' },
          },
        })),
      ).flat(),
    );
    const watch = await watchUntil(kc, `/api/v1/namespaces/${ns}/pods`, (objs) => objs.size === pods.length && [...objs.values()].every(podReady));
    counts = fresh();
    const writes0 = await apiserverWrites(kc);
    const sandbox0 = componentsCpu(components);
    const cpu0 = process.cpuUsage();
    const t0 = nowMs();
    // Pods first then Services, as Ripple's plan orders them; the same number of requests in flight.
    const writes: Array<[string, unknown]> = [
      ...pods.map((p): [string, unknown] => [collectionPath(Resources.pod, ns), p]),
      ...services.map((s): [string, unknown] => [collectionPath(Resources.service, ns), s]),
    ];
    await bounded(writes, CLIENT_CONCURRENCY, async ([p, body]) => void (await kubeRequest(kc, p, { method: 'POST', body })));
    await watch.finished;
    const seconds = (nowMs() - t0) / 1000;
    const cpuSeconds = cpuSince(cpu0);
    const sandboxCpuSeconds = componentsCpuBetween(sandbox0, componentsCpu(components));
    const apiWrites = writesBetween(writes0, await apiserverWrites(kc));
    watch.stop();
    return { seconds: round(seconds, 3), cpuSeconds, sandboxCpuSeconds, apiWrites, requests: { ...counts }, total: total(counts) };
  });
}

async function ripple(kc: KubeConfig, redisUrl: string, mods: RippleModules = current) {
  return withNamespace(kc, 'bench-ms-ripple', async (ns) => {
    const log = createLogger('bench-modelserving', process.env.LOG_LEVEL ?? 'warn');
    const ms = mods.modelServing();
    // Reconciles finished, so the steady resync below knows when all of its keys ran.
    let reconciled = 0;
    const inner = ms.reconcile;
    ms.reconcile = async (req, ctx) => {
      try {
        return await inner(req, ctx);
      } finally {
        reconciled++;
      }
    };
    const functions = [ms, mods.emitEvents()];
    const prefix = `bench-ms-${Date.now().toString(36)}`;
    counts = fresh();
    const host = new mods.FunctionHost({ kc, redisUrl, prefix, functions, log, namespace: ns });
    const watcher = new mods.Watcher({
      kc,
      functions,
      // A baseline checkout from before the batch window moved into the watcher (b779f9c) hands the window over
      // as a delay instead: passed on, so that side batches as it did.
      enqueue: async (fn, key, reason, resourceVersion, delayMs?: number) => void (await host.enqueue(fn, key, reason, delayMs ?? 0, resourceVersion)),
      isLeader: () => true,
      log,
      namespace: ns,
    });
    host.startWorkers();
    watcher.start();
    await watcher.waitForSync(60_000);
    const startup = { ...counts };
    const watch = await watchAllAvailable(kc, ns);
    counts = fresh();
    byShape = {};
    const writes0 = await apiserverWrites(kc);
    const profile = mods === current ? await startProfile() : undefined;
    const sandbox0 = componentsCpu(components);
    const cpu0 = process.cpuUsage();
    const t0 = nowMs();
    await createModelServings(kc, ns);
    await watch.finished;
    const seconds = (nowMs() - t0) / 1000;
    const cpuSeconds = cpuSince(cpu0);
    const sandboxCpuSeconds = componentsCpuBetween(sandbox0, componentsCpu(components));
    // Reconciles that ran to converge (each costs CPU in the queue and Redis even when it sends no API request).
    const reconcilesToConverge = reconciled;
    const run = { ...counts };
    const runByShape = Object.fromEntries(Object.entries(byShape).sort((a, b) => b[1] - a[1]));
    // Read after the counts above, so this request's time does not let more reconciles into them.
    const apiWrites = writesBetween(writes0, await apiserverWrites(kc));
    await stopProfile(profile);
    watch.stop();
    // Role Events are still being written after status says Available: count them until they stop.
    let events = counts.event;
    for (let quiet = 0, waited = 0; quiet < 2_000 && waited < 30_000; waited += 250) {
      await new Promise((r) => setTimeout(r, 250));
      quiet = counts.event === events ? quiet + 250 : 0;
      events = counts.event;
    }
    const cpuSecondsWithEvents = cpuSince(cpu0);
    // A steady resync: every converged ModelServing reconciled once more, with nothing to change.
    // Writes are read from the API server's own counters, before and after.
    const writesBefore = await apiserverWrites(kc);
    const resyncCounts = fresh();
    counts = resyncCounts;
    const cpu1 = process.cpuUsage();
    const target = reconciled + COUNT;
    const enqueued = await host.resync(ms.name, 'resync');
    for (let waited = 0; reconciled < target && waited < 60_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
    // Anything a reconcile handed to emit-events lands shortly after it.
    await new Promise((r) => setTimeout(r, 2_000));
    const resync = {
      enqueued,
      reconciled: reconciled - (target - COUNT),
      cpuSeconds: cpuSince(cpu1),
      requests: { ...resyncCounts },
      apiserverWrites: writesBetween(writesBefore, await apiserverWrites(kc)),
    };
    await watcher.stop();
    // The workers' cache of ModelServing children (children-cache.ts) watches until stopped.
    const lateEnqueues = mods.lateEnqueuesTotal();
    await mods.stopChildrenCaches();
    await host.close();
    // The run's queues and datastore, in case the Redis is a shared one (REDIS_URL).
    const cleanup = new Redis(redisUrl);
    const keys = await cleanup.keys(`${prefix}*`);
    for (let i = 0; i < keys.length; i += 500) await cleanup.del(...keys.slice(i, i + 500));
    cleanup.disconnect();
    return {
      seconds: round(seconds, 3),
      cpuSeconds,
      sandboxCpuSeconds,
      apiWrites,
      cpuSecondsWithEvents,
      startup,
      requests: run,
      requestsByShape: runByShape,
      reconcilesToConverge,
      total: total(run),
      eventWrites: events,
      resync,
      // Reconciles the children cache asked for because a child event was not read by one (its rule 2).
      lateEnqueues,
    };
  });
}

/**
 * Kthena's controller (modelserving only, 5 workers, client QPS 100 / burst 200 as in issue 13's table),
 * started before the side's namespace and stopped after it is gone, so it neither sees the other sides'
 * ModelServings nor counts its start-up. Its CPU is read from /proc; its requests are not counted (another process).
 */
async function kthena(kc: KubeConfig, kubeconfig: string, bin: string) {
  const controller = spawn(bin, ['--kubeconfig', kubeconfig, '--enable-webhook=false', '--controllers=modelserving', '--workers=5', '--kube-api-qps=100', '--kube-api-burst=200'], {
    stdio: 'ignore',
  });
  const pid = controller.pid;
  if (pid === undefined) throw new Error(`could not start ${bin}: check BENCH_KTHENA_BIN`);
  const exited = new Promise<void>((r) => controller.once('exit', () => r()));
  try {
    // It has no readiness endpoint out of cluster: its informers list an empty namespace set well within this.
    await new Promise((r) => setTimeout(r, 5_000));
    if (controller.exitCode !== null) throw new Error(`${bin} exited with ${controller.exitCode} before the side started: run it by hand to see why`);
    return await withNamespace(kc, 'bench-ms-kthena', async (ns) => {
      const watch = await watchAllAvailable(kc, ns);
      const writes0 = await apiserverWrites(kc);
      const sandbox0 = componentsCpu(components);
      const cpu0 = cpuSeconds(pid) ?? 0;
      const t0 = nowMs();
      await createModelServings(kc, ns);
      await watch.finished;
      const seconds = (nowMs() - t0) / 1000;
      const controllerCpu = round((cpuSeconds(pid) ?? cpu0) - cpu0, 2);
      const sandboxCpuSeconds = componentsCpuBetween(sandbox0, componentsCpu(components));
      const apiWrites = writesBetween(writes0, await apiserverWrites(kc));
      watch.stop();
      return { seconds: round(seconds, 3), cpuSeconds: controllerCpu, sandboxCpuSeconds, apiWrites };
    });
  } finally {
    controller.kill('SIGKILL');
    await exited;
  }
}

function installCrds(kubeconfig: string): void {
  const kubectl = path.join(root, '.cache', 'control-plane', 'bin', 'kubectl');
  const out = spawnSync(existsSync(kubectl) ? kubectl : 'kubectl', ['--kubeconfig', kubeconfig, 'apply', '--server-side', '--force-conflicts', '-f', path.join(root, 'infra/crds/modelserving.yaml')], {
    encoding: 'utf8',
  });
  if (out.status !== 0) throw new Error(`installing the ModelServing CRD failed: ${out.stderr}`);
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] ?? Number.NaN) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
};

const controlPlane = await startControlPlane();
const redis = await startRedis();
/**
 * The sandbox's processes whose CPU each side's window reads: the control plane's (none when it was not started from
 * this checkout) and Redis when it runs on this machine.
 */
const components = await sandboxComponents(process.env.RIPPLE_SANDBOX_DIR ?? path.join(root, '.sandbox'), redis.source === 'REDIS_URL' ? undefined : redis.url);
try {
  installCrds(controlPlane.kubeconfig);
  const kc = loadKubeConfig({ kind: 'kubeconfig', path: controlPlane.kubeconfig });
  const beforeModules = BEFORE_REF ? await modulesAt(baselineCheckout(root, BEFORE_REF)) : undefined;
  const rounds = [];
  for (let r = 0; r < ROUNDS; r++) {
    // Alternate the order so neither side always runs on a warmer (or busier) machine.
    const sides = ['baseline', 'ripple', ...(beforeModules ? (['before'] as const) : []), ...(KTHENA_BIN ? (['kthena'] as const) : [])];
    const order = r % 2 === 0 ? [...sides] : [...sides].reverse();
    const row: {
      baseline?: Awaited<ReturnType<typeof baseline>>;
      ripple?: Awaited<ReturnType<typeof ripple>>;
      before?: Awaited<ReturnType<typeof ripple>>;
      kthena?: Awaited<ReturnType<typeof kthena>>;
    } = {};
    for (const side of order) {
      if (side === 'baseline') row.baseline = await baseline(kc);
      else if (side === 'ripple') row.ripple = await ripple(kc, redis.url);
      else if (side === 'before' && beforeModules) row.before = await ripple(kc, redis.url, beforeModules);
      else if (side === 'kthena' && KTHENA_BIN) row.kthena = await kthena(kc, controlPlane.kubeconfig, KTHENA_BIN);
    }
    const b = row.baseline;
    const rp = row.ripple;
    if (!b || !rp) throw new Error('a side did not run');
    rounds.push({
      ...row,
      ratio: round(rp.seconds / b.seconds, 2),
      ...(row.before ? { beforeRatio: round(row.before.seconds / b.seconds, 2) } : {}),
      ...(row.kthena ? { kthenaRatio: round(row.kthena.seconds / b.seconds, 2) } : {}),
    });
    if (row.kthena) {
      const k = row.kthena;
      console.log(`round ${r + 1}: kthena ${k.seconds}s, ${k.cpuSeconds} CPU s of its controller, ratio ${round(k.seconds / b.seconds, 2)}; sandbox CPU s ${JSON.stringify(k.sandboxCpuSeconds)}; API server writes ${JSON.stringify(k.apiWrites)}`);
    }
    if (row.before) {
      const bf = row.before;
      console.log(
        `round ${r + 1}: ripple before (${BEFORE_REF}) ${bf.seconds}s, ${bf.cpuSeconds} CPU s (${bf.total} requests, ${round(bf.total / COUNT, 1)}/ModelServing; +${bf.eventWrites} Event writes), ratio ${round(bf.seconds / b.seconds, 2)}, ${bf.reconcilesToConverge} reconciles; ` +
          `steady resync: API server writes ${JSON.stringify(bf.resync.apiserverWrites)}, requests ${total(bf.resync.requests, true)}`,
      );
    }
    console.log(
      `round ${r + 1}: ripple ${rp.seconds}s, ${rp.cpuSeconds} CPU s (${rp.total} requests, ${round(rp.total / COUNT, 1)}/ModelServing; +${rp.eventWrites} Event writes), ` +
        `baseline ${b.seconds}s, ${b.cpuSeconds} CPU s (${b.total} requests), ratio ${round(rp.seconds / b.seconds, 2)}; ` +
        `${rp.reconcilesToConverge} reconciles, ${rp.lateEnqueues} late-event enqueues; sandbox CPU s: ripple ${JSON.stringify(rp.sandboxCpuSeconds)}, baseline ${JSON.stringify(b.sandboxCpuSeconds)}; API server writes: ripple ${JSON.stringify(rp.apiWrites)}, baseline ${JSON.stringify(b.apiWrites)}; steady resync of ${rp.resync.reconciled}: API server writes ${JSON.stringify(rp.resync.apiserverWrites)}, requests ${total(rp.resync.requests, true)}`,
    );
  }
  const ripples = rounds.map((r) => r.ripple).filter((x) => x !== undefined);
  const baselines = rounds.map((r) => r.baseline).filter((x) => x !== undefined);
  const befores = rounds.map((r) => r.before).filter((x) => x !== undefined);
  const kthenas = rounds.map((r) => r.kthena).filter((x) => x !== undefined);
  const summary = {
    modelServings: COUNT,
    podsPerModelServing: GROUPS * ROLES.length * 2,
    servicesPerModelServing: GROUPS * ROLES.length,
    clientConcurrency: CLIENT_CONCURRENCY,
    medianSeconds: { ripple: round(median(ripples.map((x) => x.seconds)), 3), baseline: round(median(baselines.map((x) => x.seconds)), 3) },
    medianRatio: round(median(rounds.map((r) => r.ratio)), 2),
    // CPU seconds of this process from the first create to converged: Ripple's watcher, workers and
    // emit-events for the Ripple side; the benchmark's own creates and watch for the baseline side.
    medianCpuSeconds: { ripple: round(median(ripples.map((x) => x.cpuSeconds)), 2), baseline: round(median(baselines.map((x) => x.cpuSeconds)), 2) },
    // The sandbox's processes (API server, etcd, controller-manager, scheduler, KWOK, Redis) over the same window:
    // with this process, what the machine spent on each side's converge.
    medianSandboxCpuSeconds: {
      ripple: round(median(ripples.map((x) => x.sandboxCpuSeconds.total ?? 0)), 2),
      baseline: round(median(baselines.map((x) => x.sandboxCpuSeconds.total ?? 0)), 2),
      apiserver: { ripple: round(median(ripples.map((x) => x.sandboxCpuSeconds['kube-apiserver'] ?? 0)), 2), baseline: round(median(baselines.map((x) => x.sandboxCpuSeconds['kube-apiserver'] ?? 0)), 2) },
    },
    // Writes the API server counted from every client between the first create and converged (the scheduler's bindings
    // and Events and KWOK's status writes included, alike on every side), per ModelServing.
    medianApiWritesPerModelServing: { ripple: round(median(ripples.map((x) => sumOf(x.apiWrites))) / COUNT, 1), baseline: round(median(baselines.map((x) => sumOf(x.apiWrites))) / COUNT, 1) },
    steadyResync: {
      apiServerWrites: Math.max(...ripples.map((x) => sumOf(x.resync.apiserverWrites))),
      requestsPerModelServing: round(median(ripples.map((x) => total(x.resync.requests, true))) / COUNT, 1),
    },
    requestsPerModelServing: {
      ripple: round(median(ripples.map((x) => x.total)) / COUNT, 1),
      eventWrites: round(median(ripples.map((x) => x.eventWrites)) / COUNT, 1),
      baseline: round(median(baselines.map((x) => x.total)) / COUNT, 1),
    },
    ...(befores.length > 0
      ? {
          before: {
            ref: BEFORE_REF,
            medianSeconds: round(median(befores.map((x) => x.seconds)), 3),
            medianRatio: round(median(rounds.map((r) => r.beforeRatio ?? Number.NaN)), 2),
            medianCpuSeconds: round(median(befores.map((x) => x.cpuSeconds)), 2),
            requestsPerModelServing: round(median(befores.map((x) => x.total)) / COUNT, 1),
            eventWrites: round(median(befores.map((x) => x.eventWrites)) / COUNT, 1),
            steadyResyncApiServerWrites: Math.max(...befores.map((x) => sumOf(x.resync.apiserverWrites))),
            steadyResyncRequestsPerModelServing: round(median(befores.map((x) => total(x.resync.requests, true))) / COUNT, 1),
          },
        }
      : {}),
  };
  const kthenaSummary =
    kthenas.length > 0
      ? {
          medianSeconds: round(median(kthenas.map((x) => x.seconds)), 3),
          medianRatio: round(median(rounds.map((r) => r.kthenaRatio ?? Number.NaN)), 2),
          medianCpuSeconds: round(median(kthenas.map((x) => x.cpuSeconds)), 2),
          medianSandboxCpuSeconds: round(median(kthenas.map((x) => x.sandboxCpuSeconds.total ?? 0)), 2),
          medianApiserverCpuSeconds: round(median(kthenas.map((x) => x.sandboxCpuSeconds['kube-apiserver'] ?? 0)), 2),
          medianApiWritesPerModelServing: round(median(kthenas.map((x) => sumOf(x.apiWrites))) / COUNT, 1),
        }
      : undefined;
  const result = { bench: 'modelserving-converge', at: new Date().toISOString(), node: process.version, summary: { ...summary, ...(kthenaSummary ? { kthena: kthenaSummary } : {}) }, rounds };
  mkdirSync(path.join(here, 'results'), { recursive: true });
  writeFileSync(path.join(here, 'results/modelserving-converge.json'), `${JSON.stringify(result, null, 2)}\n`);
  const last = ripples[ripples.length - 1];
  const md = [
    '# modelserving-converge',
    '',
    `${COUNT} ModelServings × ${GROUPS} ServingGroups × ${ROLES.length} roles × (1 entry + 1 worker): ${COUNT * summary.podsPerModelServing} pods and ` +
      `${COUNT * summary.servicesPerModelServing} headless Services, converged to Available on the sandbox (KWOK nodes), beside a baseline that ` +
      `creates the same pods and Services directly with the same client concurrency (${CLIENT_CONCURRENCY}) and waits for the pods to be Ready. ` +
      `Median of ${ROUNDS} round(s), ${result.at}, Node ${process.version}.`,
    '',
    '| | seconds | CPU seconds of the process | CPU seconds of the sandbox (of them the API server) | API requests per ModelServing | API server writes per ModelServing, all clients |',
    '|---|---|---|---|---|---|',
    `| Ripple (reconcile-modelserving) | ${summary.medianSeconds.ripple} | ${summary.medianCpuSeconds.ripple} | ${summary.medianSandboxCpuSeconds.ripple} (${summary.medianSandboxCpuSeconds.apiserver.ripple}) | ${summary.requestsPerModelServing.ripple} (+ ${summary.requestsPerModelServing.eventWrites} Event writes) | ${summary.medianApiWritesPerModelServing.ripple} |`,
    `| baseline (direct creates) | ${summary.medianSeconds.baseline} | ${summary.medianCpuSeconds.baseline} | ${summary.medianSandboxCpuSeconds.baseline} (${summary.medianSandboxCpuSeconds.apiserver.baseline}) | ${summary.requestsPerModelServing.baseline} | ${summary.medianApiWritesPerModelServing.baseline} |`,
    `| ratio | ${summary.medianRatio} | | | ${round(summary.requestsPerModelServing.ripple / summary.requestsPerModelServing.baseline, 2)} | |`,
    ...(kthenaSummary
      ? [
          `| Kthena's controller (5 workers, QPS 100 / burst 200) | ${kthenaSummary.medianSeconds} | ${kthenaSummary.medianCpuSeconds} (its own process) | ${kthenaSummary.medianSandboxCpuSeconds} (${kthenaSummary.medianApiserverCpuSeconds}) | not counted here (another process) | ${kthenaSummary.medianApiWritesPerModelServing} |`,
          `| Kthena / baseline | ${kthenaSummary.medianRatio} | | | | |`,
        ]
      : []),
    ...(summary.before
      ? [
          `| Ripple before (${summary.before.ref}) | ${summary.before.medianSeconds} | ${summary.before.medianCpuSeconds} | ${summary.before.requestsPerModelServing} (+ ${summary.before.eventWrites} Event writes) |`,
          `| before / baseline | ${summary.before.medianRatio} | | ${round(summary.before.requestsPerModelServing / summary.requestsPerModelServing.baseline, 2)} |`,
        ]
      : []),
    '',
    ...(summary.before
      ? [
          `Ripple before (${summary.before.ref}), steady resync: ${summary.before.steadyResyncApiServerWrites} API writes, ${summary.before.steadyResyncRequestsPerModelServing} requests per ModelServing.`,
          '',
        ]
      : []),
    `Steady resync of the ${COUNT} converged ModelServings (each reconciled once more): ${summary.steadyResync.apiServerWrites} API writes ` +
      `(apiserver_request_total of POST/PUT/PATCH/DELETE on pods, services, controllerrevisions, podgroups, modelservings and events, before and after; the most of any round), ` +
      `${summary.steadyResync.requestsPerModelServing} requests per ModelServing in all.`,
    '',
    last
      ? `Last Ripple round, requests until converged by kind (all ${COUNT} ModelServings): ${Object.entries(last.requests)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')} (events: up to convergence; ${last.eventWrites} in all); watcher start-up (not per ModelServing): ${total(last.startup, true)} requests; ${last.reconcilesToConverge} reconciles until converged. By path: ${Object.entries(last.requestsByShape)
          .map(([k, v]) => `${k} ${v}`)
          .join('; ')}.`
      : '',
    '',
    'Requests are counted on the process\'s HTTPS client, so they are exactly the requests Ripple\'s watcher, workers and emit-events sent (the',
    'benchmark\'s own creates and watches are tagged and left out). Event writes (emit-events: RoleCreating/RoleRunning and condition',
    'transitions, what `kubectl get events` shows) are counted apart, until they stop; the baseline writes none.',
    'CPU seconds of the sandbox: kube-apiserver, etcd, kube-controller-manager, kube-scheduler, KWOK (the pids the sandbox recorded) and Redis, read from /proc over the',
    'same window. On a 2-core machine a side cannot converge faster than (this process + the sandbox) / 2 cores.',
    'API server writes: apiserver_request_total (POST/PUT/PATCH/DELETE on pods, services, controllerrevisions, podgroups, modelservings and',
    'events, subresources included) from the first create to converged, every client: the scheduler\'s bindings and Events and KWOK\'s status',
    'writes are in every side alike, so the difference to the baseline is what the controller wrote.',
    '',
  ].join('\n');
  writeFileSync(path.join(here, 'results/modelserving-converge.md'), md);
  console.log(JSON.stringify(summary));
} finally {
  await redis.stop();
  await controlPlane.stop();
}
