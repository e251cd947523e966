// Reconciles through function pods (the chart's serverless mode on Kubernetes: the dispatcher POSTs each reconcile
// to a `ripple serve` Deployment behind a Service, KEDA scales it 0..N on its queue) beside the in-process worker
// (the chart's scaled mode: the function's handler runs in its worker pod), in one run on the sandbox's real node,
// from Ripple's image. The same function on both sides (test/fixtures/serverless-fault-function.ts: it reads its
// object, stamps its read in Redis, GETs and PUTs a ConfigMap, writes its fenced state and commits — a small real
// reconcile of two API calls and three Redis scripts), the same watcher, the same events:
// - warm: BENCH_EVENTS (60) events paced at BENCH_RATE (5) per second over 10 objects (no coalescing): event →
//   reconcile start and event → commit, p50/p99; CPU seconds of the pods on the path (worker; dispatcher +
//   function pods) over the run, beside its wall time;
// - from zero (serverless only: the workers never go below one): KEDA scales the function to zero once idle, then
//   one event; event → start, event → commit, and the scale-out (event → first function pod Ready), and the
//   scale-to-zero time (last reconcile → no pod), BENCH_COLD_ROUNDS (3) times.
// The event's time is when its PATCH was sent; the reconcile's start and end are the handler's own clock readings:
// every pod runs on this machine, one clock. Needs root (the real node). Results: bench/results/serverless-functions.json
// and .md.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { startKeda } from '../sandbox/keda.js';
import { startControlPlane } from '../sandbox/control-plane.js';
import { RedisProcess } from '../test/faults/harness/redis-process.js';
import { FAULT_FUNCTION } from '../test/fixtures/serverless-fault-function.js';
import { faultFunctionValues, FaultFunctionCase } from '../test/harness/fault-function.js';
import { startPrometheus } from '../test/harness/prometheus.js';
import { ok, RippleRelease } from '../test/harness/ripple-release.js';
import { openSandbox, waitFor, type TestSandbox } from '../test/harness/sandbox.js';
import { percentile, round } from './stats.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const EVENTS = Number(process.env.BENCH_EVENTS ?? 60);
const RATE = Number(process.env.BENCH_RATE ?? 5);
const COLD_ROUNDS = Number(process.env.BENCH_COLD_ROUNDS ?? 3);
const KEYS = 10;
const BUILTIN = ['reconcile-modelserving', 'reconcile-autoscaler', 'ops-lifecycle', 'emit-events'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sandboxDir = process.env.RIPPLE_SANDBOX_DIR ?? path.join(root, '.sandbox');
const controlPlane = await startControlPlane({ log: (l) => console.error(l) });
const where = { kubeconfig: controlPlane.kubeconfig, sandboxDir };
const keyspace = await RedisProcess.start();
// A failed run (it throws) still leaves no redis-server behind.
process.once('exit', () => {
  try {
    if (keyspace.pid) process.kill(keyspace.pid);
  } catch {
    // stopped already
  }
});

interface Side {
  sb: TestSandbox;
  release: RippleRelease;
  redis: Redis;
  prefix: string;
  moduleDir: string;
}

async function open(label: string, name: string): Promise<Side> {
  const sb = await openSandbox(label, { kubeconfig: controlPlane.kubeconfig, redisUrl: keyspace.url });
  const release = await RippleRelease.prepare(sb, name, where);
  const redis = new Redis(release.redis.port, '127.0.0.1', { password: release.redisPassword, maxRetriesPerRequest: null });
  return { sb, release, redis, prefix: sb.prefix.replace(/[^a-z0-9-]/g, '-'), moduleDir: mkdtempSync(path.join(tmpdir(), `ripple-bench-${name}-`)) };
}

async function close(side: Side): Promise<void> {
  side.redis.disconnect();
  await side.release.uninstall();
  await side.sb.cleanup();
  rmSync(side.moduleDir, { recursive: true, force: true });
}

const podsOf = async (side: Side, deployment: string) =>
  (await side.sb.core.listNamespacedPod({ namespace: side.sb.namespace })).items.filter(
    (p) => p.metadata?.name?.startsWith(`${deployment}-`) && !p.metadata.deletionTimestamp && p.metadata.ownerReferences?.some((o) => o.kind === 'ReplicaSet'),
  );
const readyPods = async (side: Side, deployment: string) => (await podsOf(side, deployment)).filter((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));

/** CPU ticks (user + system) each running container of these Deployments' pods has used so far, from /proc on the host. */
async function containerTicks(side: Side, deployments: string[]): Promise<Map<string, { deployment: string; ticks: number }>> {
  const out = new Map<string, { deployment: string; ticks: number }>();
  for (const d of deployments) {
    for (const pod of await podsOf(side, d)) {
      const id = pod.status?.containerStatuses?.[0]?.containerID?.replace('containerd://', '');
      if (!id) continue;
      const ps = spawnSync('ctr', ['--address', path.join(sandboxDir, 'node', 'containerd.sock'), '-n', 'k8s.io', 'tasks', 'ps', id], { encoding: 'utf8' });
      let ticks = 0;
      for (const line of ps.stdout.split('\n').slice(1)) {
        const pid = Number(line.trim().split(/\s+/)[0]);
        if (!Number.isInteger(pid) || pid <= 0) continue;
        try {
          const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
          ticks += Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14, 15 of stat)
        } catch {
          // exited meanwhile
        }
      }
      out.set(id, { deployment: d, ticks });
    }
  }
  return out;
}

/**
 * CPU seconds of the pods on the path over a run, sampled every 500 ms: KEDA may start and stop function pods
 * meanwhile, so each container counts from its reading at the start (or from zero, start-up included, when it
 * started during the run) to its last reading.
 */
async function meterCpu(side: Side, deployments: string[]): Promise<() => Promise<{ total: number; by: Record<string, number>; containers: number }>> {
  const first = await containerTicks(side, deployments);
  const last = new Map(first);
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      for (const [id, t] of await containerTicks(side, deployments)) last.set(id, t);
      await sleep(500);
    }
  })();
  return async () => {
    stopped = true;
    await loop;
    for (const [id, t] of await containerTicks(side, deployments)) last.set(id, t);
    // USER_HZ: 100 ticks a second.
    const by: Record<string, number> = {};
    for (const [id, t] of last) by[t.deployment] = (by[t.deployment] ?? 0) + (t.ticks - (first.get(id)?.ticks ?? 0)) / 100;
    return { total: Object.values(by).reduce((a, b) => a + b, 0), by, containers: last.size };
  };
}

const stats = (xs: number[]) => ({ n: xs.length, p50: round(percentile(xs, 50), 1), p99: round(percentile(xs, 99), 1) });

/** Paced events over KEYS objects, then each event's start and commit latency from the handler's records. */
async function warm(side: Side, deployments: string[]): Promise<Record<string, unknown>> {
  const c = await new FaultFunctionCase(side.sb, side.redis, side.prefix, 'warm', KEYS).start();
  await c.converged(180_000);
  const cpuDone = await meterCpu(side, deployments);
  const t0 = Date.now();
  for (let i = 0; i < EVENTS; i++) {
    const at = t0 + (i * 1000) / RATE;
    await sleep(Math.max(0, at - Date.now()));
    await c.event(c.names[i % KEYS]!);
  }
  await c.converged(120_000);
  const wallS = (Date.now() - t0) / 1000;
  const cpuRead = await cpuDone();
  const cpu = cpuRead.total;
  const first = new Map<string, { start: number; end: number }>();
  for (const r of await c.history()) {
    const id = `${r.key}@${r.version}`;
    if (!first.has(id)) first.set(id, { start: r.start, end: r.end });
  }
  const toStart: number[] = [];
  const toCommit: number[] = [];
  const handler: number[] = [];
  for (const [id, sent] of c.sentAt) {
    const r = first.get(id);
    if (!r || sent < t0) continue;
    toStart.push(r.start - sent);
    toCommit.push(r.end - sent);
    handler.push(r.end - r.start);
  }
  await c.stop();
  return { eventToStartMs: stats(toStart), eventToCommitMs: stats(toCommit), handlerMs: stats(handler), reconciled: toStart.length, events: EVENTS, wallS: round(wallS, 1), cpuS: round(cpu, 2), cpuByDeployment: Object.fromEntries(Object.entries(cpuRead.by).map(([d, v]) => [d, round(v, 2)])), containers: cpuRead.containers, cpuMsPerReconcile: round((cpu * 1000) / Math.max(1, toStart.length), 1) };
}

const results: Record<string, unknown> = { date: new Date().toISOString(), events: EVENTS, rate: RATE, keys: KEYS, coldRounds: COLD_ROUNDS };

// The in-process worker: the chart's scaled mode, the function's handler in its worker pod.
{
  const side = await open('bench-worker', 'bsw');
  const values = faultFunctionValues(side.moduleDir);
  side.release.install({ watcher: { replicas: 1 }, ops: { replicas: 1 }, workers: { replicas: 1 }, ...values });
  // Ripple's own functions have no work here: their workers stop, as the function pods of the other side stay at zero.
  for (const f of BUILTIN) ok(side.release.kubectl(['scale', `deployment/${side.release.object(`worker-${f}`)}`, '--replicas=0']), `scaling ${f}'s worker to 0`);
  results.worker = await warm(side, [side.release.object(`worker-${FAULT_FUNCTION}`)]);
  console.log(`bench: in-process worker ${JSON.stringify(results.worker)}`);
  await close(side);
}

/**
 * The dispatcher's log lines from the event on (its hold, its calls and their outcomes), each at its offset from the
 * event, with the pod's Ready beside them: where a from-zero start waits after the pod is Ready.
 */
function dispatcherStory(side: Side, deployment: string, sent: number, readyAt: number): string {
  const out = side.release.kubectl(['logs', `deploy/${deployment}`, `--since-time=${new Date(sent - 1000).toISOString()}`]).stdout;
  const lines = [`  +${readyAt - sent} ms  (function pod Ready, as polled)`];
  for (const raw of out.split('\n')) {
    let rec: unknown;
    try {
      rec = JSON.parse(raw);
    } catch {
      continue;
    }
    if (typeof rec !== 'object' || rec === null) continue;
    const r = rec as Record<string, unknown>;
    // The bench's function only (Ripple's own functions are dispatched beside it), without the held resync's ticks.
    if (typeof r.time !== 'number' || r.time < sent || r.function !== FAULT_FUNCTION || r.msg === 'resync tick run while held') continue;
    const { time, msg, key, err, waitMs, ready, ms } = r;
    lines.push(`  +${time - sent} ms  ${String(msg)}${key ? ` key=${String(key)}` : ''}${ready !== undefined ? ` ready=${String(ready)}` : ''}${err ? ` err=${String(err)}` : ''}${waitMs ? ` waitMs=${String(waitMs)}` : ''}${ms ? ` ms=${String(ms)}` : ''}`);
  }
  return lines.sort((a, b) => Number(/\+(\d+)/.exec(a)![1]) - Number(/\+(\d+)/.exec(b)![1])).join('\n');
}

// Function pods: the chart's serverless mode on Kubernetes, KEDA scaling the function on its queue from Prometheus.
{
  const side = await open('bench-fn', 'bsf');
  const fn = side.release.object(FAULT_FUNCTION);
  const dispatcher = side.release.object('dispatcher');
  const values = faultFunctionValues(side.moduleDir);
  const kedaCrds = path.join(root, '.cache', 'control-plane', 'bin', 'keda-crds');
  ok(side.release.kubectl(['apply', '--server-side', '--force-conflicts', '-f', kedaCrds]), 'applying KEDA’s CRDs');
  const serverless = (prometheusAddress: string) => ({
    mode: 'serverless',
    functionToken: { value: 'function-token-for-the-real-node-0123456789' },
    watcher: { replicas: 1 },
    ops: { replicas: 1 },
    serverless: {
      platform: 'kubernetes',
      // Debug: each cold round prints the dispatcher's own account of its hold and its calls (below).
      dispatcher: { replicas: 1, extraEnv: [{ name: 'LOG_LEVEL', value: 'debug' }] },
      functions: { minScale: 0, maxScale: 3 },
      kubernetes: { prometheusAddress, threshold: 4, pollingInterval: 1, cooldownPeriod: 10, scaleDownStabilizationSeconds: 10 },
    },
    ...values,
  });
  side.release.install(serverless('http://127.0.0.1:1'));
  const ops = await waitFor('the ops pod', 60_000, async () => (await readyPods(side, side.release.object('ops')))[0]);
  const prometheus = await startPrometheus({ targets: [], rippleTargets: [`${ops.status?.podIP}:8081`] });
  await prometheus.waitForTargetsUp(60_000);
  const keda = await startKeda({ kubeconfig: controlPlane.kubeconfig, watchNamespaces: [side.sb.namespace] });
  try {
    side.release.install(serverless(prometheus.url));
    // Warm: the first events bring a pod up; measured once one is Ready.
    results.functionsWarm = await warm(side, [fn, dispatcher]);
    console.log(`bench: function pods, warm ${JSON.stringify(results.functionsWarm)}`);
    const cold: Array<Record<string, number>> = [];
    const c = await new FaultFunctionCase(side.sb, side.redis, side.prefix, 'cold', 1).start();
    await c.converged(180_000);
    for (let i = 0; i < COLD_ROUNDS; i++) {
      const idleFrom = Math.max(...(await c.history()).map((r) => r.end));
      await waitFor('KEDA to scale the function to zero', 300_000, async () => ((await podsOf(side, fn)).length === 0 ? true : undefined), 250);
      const toZero = Date.now() - idleFrom;
      const sent = Date.now();
      await c.event(c.names[0]!);
      const readyAt = await waitFor('a function pod Ready', 180_000, async () => ((await readyPods(side, fn)).length > 0 ? Date.now() : undefined), 100);
      await c.converged(180_000);
      const r = (await c.history()).find((x) => x.version === c.versions.get(c.key(c.names[0]!)));
      cold.push({ scaleToZeroS: round(toZero / 1000, 1), scaleOutMs: readyAt - sent, eventToStartMs: (r?.start ?? Number.NaN) - sent, eventToCommitMs: (r?.end ?? Number.NaN) - sent });
      console.log(`bench: from zero, round ${i + 1}: ${JSON.stringify(cold[cold.length - 1])}`);
      console.log(dispatcherStory(side, dispatcher, sent, readyAt));
    }
    await c.stop();
    results.functionsFromZero = {
      rounds: cold,
      eventToStartMs: stats(cold.map((x) => x.eventToStartMs!)),
      eventToCommitMs: stats(cold.map((x) => x.eventToCommitMs!)),
      scaleOutMs: stats(cold.map((x) => x.scaleOutMs!)),
      scaleToZeroS: stats(cold.map((x) => x.scaleToZeroS!)),
    };
  } catch (err) {
    // What the dispatcher saw, kept past the uninstall: a run that stalls says where.
    const file = path.join(root, '.cache', 'bench-serverless-dispatcher.log');
    writeFileSync(file, side.release.kubectl(['logs', `deploy/${dispatcher}`, '--tail=-1']).stdout);
    console.error(`bench: the dispatcher's log is in ${file}`);
    throw err;
  } finally {
    // Uninstalled while KEDA still runs: it removes its finalizers from the ScaledObjects, else the namespace stays
    // Terminating.
    await close(side);
    await keda.stop();
    await prometheus.stop();
  }
}

await keyspace.stop();
mkdirSync(path.join(here, 'results'), { recursive: true });
writeFileSync(path.join(here, 'results', 'serverless-functions.json'), `${JSON.stringify(results, null, 2)}\n`);
const w = results.worker as Record<string, { p50: number; p99: number }> & Record<string, number>;
const f = results.functionsWarm as typeof w;
const z = results.functionsFromZero as Record<string, { p50: number; p99: number }>;
const table = [
  '| | in-process worker | function pods, warm | function pods, from zero |',
  '| --- | --- | --- | --- |',
  `| event → reconcile start, p50 / p99 (ms) | ${w.eventToStartMs!.p50} / ${w.eventToStartMs!.p99} | ${f.eventToStartMs!.p50} / ${f.eventToStartMs!.p99} | ${z.eventToStartMs!.p50} / ${z.eventToStartMs!.p99} |`,
  `| event → commit, p50 / p99 (ms) | ${w.eventToCommitMs!.p50} / ${w.eventToCommitMs!.p99} | ${f.eventToCommitMs!.p50} / ${f.eventToCommitMs!.p99} | ${z.eventToCommitMs!.p50} / ${z.eventToCommitMs!.p99} |`,
  `| handler alone, p50 / p99 (ms) | ${w.handlerMs!.p50} / ${w.handlerMs!.p99} | ${f.handlerMs!.p50} / ${f.handlerMs!.p99} | — |`,
  `| CPU s (pods on the path) over wall s | ${w.cpuS} over ${w.wallS} | ${f.cpuS} over ${f.wallS} | — |`,
  `| CPU ms per reconcile | ${w.cpuMsPerReconcile} | ${f.cpuMsPerReconcile} | — |`,
  `| scale-out 0 → 1 Ready, p50 / p99 (ms) | — | — | ${z.scaleOutMs!.p50} / ${z.scaleOutMs!.p99} |`,
  `| scale to zero after the last reconcile, p50 / p99 (s) | — | — | ${z.scaleToZeroS!.p50} / ${z.scaleToZeroS!.p99} |`,
].join('\n');
writeFileSync(path.join(here, 'results', 'serverless-functions.md'), `${table}\n`);
console.log(table);
if (controlPlane.startedHere) await controlPlane.stop();
