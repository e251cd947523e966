// One measured run of bench/scale.ts: N ModelServings (1 ServingGroup × 1 role × entry + 1 worker: 2 Pods
// and 1 headless Service each) created at once in a fresh namespace, converged to Available by one
// `ripple watcher` and W `ripple worker` processes against the sandbox and the bench's Redis.
import type { KubeConfig } from '@kubernetes/client-node';
import { Redis } from 'ioredis';
import { kubeRequest } from '../../kube/raw.js';
import { collectionPath, Resources } from '../../kube/resources.js';
import { freePort } from '../../sandbox/free-port.js';
import { nowMs, percentile, round } from '../stats.js';
import { bounded, createNamespace, deleteNamespace, observe, until, type Obj } from './observe.js';
import type { RequestCounts } from './probe.js';
import { componentsCpu, componentsCpuBetween, loadAverage, rssMiB, RssPeaks } from './procstat.js';
import { addCounts, RippleProcess, zeroCounts } from './ripple-process.js';

const IMAGE = 'registry.k8s.io/pause:3.10';
const MS_FN = 'reconcile-modelserving';
const NAME_LABEL = 'modelserving.volcano.sh/name';
/** The bench's own client: enough writes in flight that creating is never what is measured. */
const CREATE_CONCURRENCY = 32;

export interface RunOptions {
  /** The checkout whose Ripple runs (bench/baseline.ts). */
  checkout: string;
  kc: KubeConfig;
  kubeconfig: string;
  redisUrl: string;
  /** Other processes whose CPU is measured over the run (kube-apiserver, etcd, kwok, ...). */
  components: Map<string, number>;
  count: number;
  workers: number;
  timeoutMs: number;
}

export interface RunResult {
  modelServings: number;
  workers: number;
  convergeSeconds: number;
  /** Requests of the watcher and workers from the first create until all were Available, and per ModelServing. */
  requests: RequestCounts;
  requestsPerObject: number;
  eventWritesPerObject: number;
  reconcilesPerObject: { untilAvailable: number; untilQuiet: number };
  /** Watch event seen by the bench → first reconcile of its ModelServing that started after it. */
  eventToReconcileMs: { samples: number; unmatched: number; p50: number; p99: number; max: number };
  redis: { usedMemoryDeltaMiB: number; bytesPerObject: number; keys: number; keyBytesPerObject: number; keyBytesByKind: Record<string, number> };
  rssMiB: { watcher: number; watcherPeak: number; workers: number[]; workerPeaks: number[] };
  /** CPU seconds each process used from the first create until Available, and as a share of one core. */
  cpu: Record<string, { seconds: number; cores: number }>;
  loadAverage: { start: number; end: number };
}

function manifest(namespace: string, name: string): Record<string, unknown> {
  const tpl = { spec: { containers: [{ name: 'main', image: IMAGE }] } };
  return {
    apiVersion: 'workload.serving.volcano.sh/v1alpha1',
    kind: 'ModelServing',
    metadata: { name, namespace },
    spec: { replicas: 1, template: { roles: [{ name: 'main', replicas: 1, workerReplicas: 1, entryTemplate: tpl, workerTemplate: tpl }] } },
  };
}

function isAvailable(obj: Obj): boolean {
  const status = obj.status as { observedGeneration?: number; availableReplicas?: number; conditions?: Array<{ type: string; status: string }> } | undefined;
  return (
    status?.observedGeneration === obj.metadata?.generation &&
    status?.availableReplicas === 1 &&
    status.conditions?.some((c) => c.type === 'Available' && c.status === 'True') === true
  );
}

function isReadyPod(obj: Obj): boolean {
  const status = obj.status as { conditions?: Array<{ type: string; status: string }> } | undefined;
  return status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
}

/** What each Redis key of the run is, for the memory breakdown: its prefix with ids folded. */
function keyKind(key: string, prefix: string): string {
  const rest = key.slice(prefix.length + 1);
  return rest
    .split(':')
    .slice(0, 2)
    .map((p) => (/^\d+$/.test(p) || p.includes('/') ? '*' : p))
    .join(':');
}

async function redisMemory(redis: Redis, prefix: string) {
  const info = await redis.info('memory');
  const used = Number(/used_memory:(\d+)/.exec(info)?.[1] ?? Number.NaN);
  const byKind: Record<string, number> = {};
  let keys = 0;
  let stream = '0';
  do {
    const [next, batch] = await redis.scan(stream, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    stream = next;
    for (const key of batch) {
      const bytes = (await redis.memory('USAGE', key)) ?? 0;
      const kind = keyKind(key, prefix);
      byKind[kind] = (byKind[kind] ?? 0) + Number(bytes);
      keys++;
    }
  } while (stream !== '0');
  return { used, keys, byKind };
}

export async function runModelServings(opts: RunOptions): Promise<RunResult> {
  const { kc, count, workers } = opts;
  const tag = `${count}-${workers}-${Date.now().toString(36)}`;
  const namespace = `scale-${tag}`;
  const prefix = `scale-${tag}`;
  const redis = new Redis(opts.redisUrl);
  await createNamespace(kc, namespace);
  const common = { checkout: opts.checkout, kubeconfig: opts.kubeconfig, redisUrl: opts.redisUrl, prefix, namespace };
  const watcher = new RippleProcess({ ...common, mode: 'watcher', opsPort: await freePort(), label: 'watcher' });
  const workerProcs: RippleProcess[] = [];
  for (let i = 0; i < workers; i++) workerProcs.push(new RippleProcess({ ...common, mode: 'worker', opsPort: await freePort(), label: `worker-${i}` }));
  const all = [watcher, ...workerProcs];
  const peaks = new RssPeaks(() => all.map((p) => p.pid));
  const observers: Array<{ stop(): void }> = [];
  try {
    await Promise.all(all.map((p) => p.ready()));
    // Leading, so it enqueues: its Lease names it.
    await until('the watcher to hold its Lease', 120_000, async () => {
      const lease = (await kubeRequest(kc, `/apis/coordination.k8s.io/v1/namespaces/ripple-system/leases/${prefix}-watcher`).catch(() => undefined)) as
        | { spec?: { holderIdentity?: string } }
        | undefined;
      return Boolean(lease?.spec?.holderIdentity);
    });
    const memBefore = await redisMemory(redis, prefix);

    // The bench's view: when each ModelServing is Available, and the events that must cause a reconcile.
    const available = new Set<string>();
    const seen = new Set<string>();
    const ready = new Set<string>();
    const events: Array<[number, string]> = [];
    let allAvailable!: () => void;
    const converged = new Promise<void>((r) => (allAvailable = r));
    const msKey = (name: string) => `${MS_FN}:${namespace}/${name}`;
    observers.push(
      await observe(kc, `/apis/workload.serving.volcano.sh/v1alpha1/namespaces/${namespace}/modelservings`, (type, obj, ms) => {
        const name = obj.metadata?.name ?? '';
        // Its creation (once: a restarted watch replays every object as ADDED).
        if (type === 'ADDED' && !seen.has(name)) events.push([ms, msKey(name)]);
        seen.add(name);
        if (type !== 'DELETED' && isAvailable(obj)) available.add(name);
        if (available.size === count) allAvailable();
      }),
    );
    observers.push(
      await observe(kc, `/api/v1/namespaces/${namespace}/pods`, (type, obj, ms) => {
        const name = obj.metadata?.name ?? '';
        const owner = obj.metadata?.labels?.[NAME_LABEL];
        if (!owner) return;
        // A Pod turning Ready: the change the ModelServing waits for, which its pod predicate always
        // passes. (A Pod's creation is not paired: it comes from the ModelServing's own reconcile, and
        // the predicate may let it go without a new reconcile.)
        if (type === 'MODIFIED' && isReadyPod(obj) && !ready.has(name)) events.push([ms, msKey(owner)]);
        if (isReadyPod(obj)) ready.add(name);
      }),
    );

    const baseline = await Promise.all(all.map((p) => p.sample()));
    const reconciles: Array<[number, string]> = [];
    const cpuPids = new Map<string, number>([...opts.components, ['watcher', watcher.pid], ...workerProcs.map((w, i): [string, number] => [`worker-${i}`, w.pid])]);
    const cpu0 = componentsCpu(cpuPids);
    const load0 = loadAverage();
    const t0 = nowMs();
    const names = Array.from({ length: count }, (_, i) => `ms-${i}`);
    await bounded(names, CREATE_CONCURRENCY, async (n) => void (await kubeRequest(kc, collectionPath(Resources.modelServing, namespace), { method: 'POST', body: manifest(namespace, n) })));
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${available.size}/${count} Available after ${opts.timeoutMs} ms`)), opts.timeoutMs).unref());
    await Promise.race([converged, timeout]);
    const seconds = (nowMs() - t0) / 1000;
    const spent = componentsCpuBetween(cpu0, componentsCpu(cpuPids));
    const cpu = Object.fromEntries([...cpuPids.keys()].map((n) => [n, { seconds: round(spent[n] ?? 0, 1), cores: round((spent[n] ?? 0) / seconds, 2) }]));
    const load1 = loadAverage();
    const atAvailable = await Promise.all(all.map((p) => p.sample()));
    for (const s of atAvailable) reconciles.push(...s.reconciles);
    const requests = atAvailable.reduce((acc, s, i) => addCounts(acc, addCounts(s.requests, baseline[i]?.requests ?? zeroCounts(), -1)), zeroCounts());
    const msReconciles = (rs: Array<[number, string]>) => rs.filter(([, k]) => k.startsWith(`${MS_FN}:${namespace}/`)).length;
    const untilAvailable = msReconciles(reconciles);

    // Until quiet: no ModelServing reconcile for 5 s (Events and status settle after Available).
    let lastChange = Date.now();
    const quietStart = Date.now();
    while (Date.now() - lastChange < 5_000 && Date.now() - quietStart < 120_000) {
      await new Promise((r) => setTimeout(r, 1_000));
      const more = (await Promise.all(all.map((p) => p.sample()))).flatMap((s) => s.reconciles);
      if (msReconciles(more) > 0) lastChange = Date.now();
      reconciles.push(...more);
    }
    const untilQuiet = msReconciles(reconciles);

    // Each event paired with the first reconcile of its key that started after the bench saw it.
    const starts = new Map<string, number[]>();
    for (const [ms, key] of reconciles) starts.set(key, [...(starts.get(key) ?? []), ms]);
    for (const list of starts.values()) list.sort((a, b) => a - b);
    const latencies: number[] = [];
    let unmatched = 0;
    for (const [ms, key] of events) {
      const next = starts.get(key)?.find((s) => s >= ms);
      if (next === undefined) unmatched++;
      else latencies.push(next - ms);
    }

    const memAfter = await redisMemory(redis, prefix);
    const keyBytes = Object.values(memAfter.byKind).reduce((a, b) => a + b, 0);
    peaks.sample();
    const result: RunResult = {
      modelServings: count,
      workers,
      convergeSeconds: round(seconds, 2),
      requests,
      requestsPerObject: round((Object.values(requests).reduce((a, b) => a + b, 0) - requests.event) / count, 1),
      eventWritesPerObject: round(requests.event / count, 1),
      reconcilesPerObject: { untilAvailable: round(untilAvailable / count, 2), untilQuiet: round(untilQuiet / count, 2) },
      eventToReconcileMs: {
        samples: latencies.length,
        unmatched,
        p50: round(percentile(latencies, 50), 1),
        p99: round(percentile(latencies, 99), 1),
        max: round(Math.max(...latencies), 1),
      },
      redis: {
        usedMemoryDeltaMiB: round((memAfter.used - memBefore.used) / 1024 / 1024, 2),
        bytesPerObject: Math.round((memAfter.used - memBefore.used) / count),
        keys: memAfter.keys,
        keyBytesPerObject: Math.round(keyBytes / count),
        keyBytesByKind: Object.fromEntries(Object.entries(memAfter.byKind).sort(([, a], [, b]) => b - a)),
      },
      rssMiB: {
        watcher: round(rssMiB(watcher.pid) ?? Number.NaN, 1),
        watcherPeak: round(peaks.peak(watcher.pid) ?? Number.NaN, 1),
        workers: workerProcs.map((w) => round(rssMiB(w.pid) ?? Number.NaN, 1)),
        workerPeaks: workerProcs.map((w) => round(peaks.peak(w.pid) ?? Number.NaN, 1)),
      },
      cpu,
      loadAverage: { start: load0, end: load1 },
    };
    return result;
  } finally {
    peaks.stop();
    for (const o of observers) o.stop();
    await Promise.all(all.map((p) => p.stop()));
    await deleteNamespace(kc, namespace);
    // The run's queues, datastore and job history: the next run measures Redis from empty.
    const keys: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      keys.push(...batch);
    } while (cursor !== '0');
    for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500));
    redis.disconnect();
  }
}
