// Reconciles per second and enqueue→start latency for a no-op handler at 1, 2 and 4 worker processes,
// Ripple's keyed queue beside plain BullMQ (add + Worker) in the same run, on the same Redis, like for
// like: both keep finished jobs the same way (JOB_RETENTION). Ripple does more per job to keep the
// workqueue contracts; the ratio says what that costs. It also counts Redis round trips per enqueue and per
// job on the worker (MONITOR: every command a client sent, not those its scripts ran; neither side
// pipelines, so one command is one round trip) and CPU seconds of the producer, the workers and Redis.
// With BENCH_BASELINE_REF (a commit) the same run also measures Ripple's queue as it was at that commit.
import { fork, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { JOB_RETENTION, WorkQueue } from '../queue/work-queue.js';
import { startMonitor } from '../sandbox/redis-monitor.js';
import { startRedis } from '../sandbox/redis.js';
import { baselineCheckout } from './baseline.js';
import { nowMs, percentile, round } from './stats.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const JOBS = Number(process.env.BENCH_JOBS ?? 2000);
const WORKERS = (process.env.BENCH_WORKERS ?? '1,2,4').split(',').map(Number);
const PACED_JOBS = Number(process.env.BENCH_PACED_JOBS ?? 500);
/**
 * Jobs each run sends through its fresh worker processes before the timer starts, on both sides alike: a worker's
 * first few hundred jobs run before V8 has optimised the code they take, and at 4 workers a 2000-job burst is 500 per
 * process, so without them the runs measured start-up as much as the queue.
 */
const WARMUP_JOBS = Number(process.env.BENCH_WARMUP_JOBS ?? 1000);
/** Bursts per side and worker count, the sides alternating: a burst is a second or two, and one can land on the machine's worst moment. */
const BURSTS = Number(process.env.BENCH_BURSTS ?? 3);
const COUNTED_JOBS = 1000;
const BASELINE_REF = process.env.BENCH_BASELINE_REF;
const baselineRoot = BASELINE_REF ? baselineCheckout(path.resolve(here, '..'), BASELINE_REF) : undefined;
type Mode = 'ripple' | 'plain' | 'baseline';

/** Commands the bench itself sends (the fixture's start record, the parent's polling and cleanup): not counted. */
const BENCH_COMMANDS = new Set(['rpush', 'llen', 'lrange', 'info', 'keys', 'del', 'monitor', 'ping']);

interface EnqueueSide {
  add(key: string): Promise<unknown>;
  close(): Promise<void>;
}
/** The baseline's WorkQueue, loaded from its checkout. */
async function rippleQueue(root: string, name: string, redis: Redis, prefix: string): Promise<EnqueueSide> {
  const mod: unknown = await import(path.join(root, 'queue/work-queue.ts'));
  const Ctor = (mod as { WorkQueue: new (o: { name: string; connection: Redis; prefix: string }) => EnqueueSide }).WorkQueue;
  return new Ctor({ name, connection: redis, prefix });
}

function enqueueSide(mode: Mode, root: string, name: string, redis: Redis, prefix: string): Promise<EnqueueSide> | EnqueueSide {
  if (mode === 'ripple') return new WorkQueue({ name, connection: redis, prefix });
  if (mode === 'baseline') return rippleQueue(root, name, redis, prefix);
  const q = new Queue(name, { connection: redis, prefix, defaultJobOptions: JOB_RETENTION });
  return { add: (key) => q.add('reconcile', { key }), close: () => q.close() };
}

interface Workers {
  children: ChildProcess[];
  /** Stops them and returns their CPU seconds (NaN when a baseline fixture does not report it). */
  stop(): Promise<number>;
}

async function startWorkers(n: number, env: Record<string, string>, fixtureRoot: string): Promise<Workers> {
  const children: ChildProcess[] = [];
  for (let i = 0; i < n; i++) {
    // BENCH_CPU_PROF=<dir>: each worker writes a V8 CPU profile there (node --cpu-prof) when it exits.
    const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.env.BENCH_CPU_PROF, env.MODE ?? '')}`] : [];
    const child = fork(path.join(fixtureRoot, 'bench/fixtures/queue-worker.ts'), [], { env: { ...process.env, ...env }, execArgv: ['--import', 'tsx', ...prof], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code) => reject(new Error(`bench worker exited with ${code}`)));
    });
    children.push(child);
  }
  const stop = async () => {
    const cpu = children.map(
      (c) =>
        new Promise<number>((resolve) => {
          c.on('message', (m: unknown) => {
            if (typeof m === 'object' && m !== null && 'cpuUs' in m) resolve(Number(m.cpuUs) / 1e6);
          });
          c.once('exit', () => resolve(Number.NaN));
        }),
    );
    for (const c of children) c.kill('SIGTERM');
    const seconds = await Promise.all(cpu);
    await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : undefined)));
    return seconds.reduce((a, b) => a + b, 0);
  };
  return { children, stop };
}

/** Redis's CPU seconds so far. */
async function redisCpuSeconds(redis: Redis): Promise<number> {
  const cpu = await redis.info('cpu');
  const num = (f: string) => Number(new RegExp(`${f}:([\\d.]+)`).exec(cpu)?.[1] ?? 0);
  return num('used_cpu_user') + num('used_cpu_sys');
}

/**
 * Counts the commands clients send (MONITOR; commands a Lua script runs are reported with source `lua`
 * and not counted), by command. Neither side pipelines, so each command is one round trip.
 */
class CommandCounter {
  private counts = new Map<string, number>();
  private constructor(
    private readonly client: Redis,
    private readonly monitor: Redis,
  ) {}

  static async start(url: string): Promise<CommandCounter> {
    const client = new Redis(url);
    const monitor = await startMonitor(client);
    const counter = new CommandCounter(client, monitor);
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      const cmd = String(args[0]).toLowerCase();
      if (source === 'lua' || BENCH_COMMANDS.has(cmd)) return;
      // Scripts by name would be unreadable: count EVALSHA/EVAL as such.
      counter.counts.set(cmd, (counter.counts.get(cmd) ?? 0) + 1);
    });
    return counter;
  }

  /** Commands per job since the last take, and starts counting afresh. */
  take(jobs: number): { total: number; byCommand: Record<string, number> } {
    const byCommand: Record<string, number> = {};
    let total = 0;
    for (const [cmd, n] of this.counts) {
      byCommand[cmd] = round(n / jobs, 3);
      total += n;
    }
    this.counts = new Map();
    return { total: round(total / jobs, 3), byCommand };
  }

  stop(): void {
    this.monitor.disconnect();
    this.client.disconnect();
  }
}

async function waitForStarts(redis: Redis, key: string, jobs: number): Promise<void> {
  while ((await redis.llen(key)) < jobs) await new Promise((r) => setTimeout(r, 20));
}

async function cleanup(redis: Redis, prefix: string): Promise<void> {
  const keys = await redis.keys(`${prefix}:*`);
  for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500));
}

/**
 * Round trips, counted apart from the timed runs so enqueue and worker are not mixed: COUNTED_JOBS
 * distinct keys enqueued by one producer with no worker running, then one worker drains them (its start
 * up counted too; it is a few commands over 1000 jobs). Steady state: a backlog in front of the worker.
 */
async function countRoundTrips(mode: Mode, redisUrl: string) {
  const prefix = `bench-rt-${mode}-${Date.now()}`;
  const name = 'noop';
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const root = mode === 'baseline' ? baselineRoot! : path.resolve(here, '..');
  const side = await enqueueSide(mode, root, name, redis, prefix);
  await side.add('ns/warm-up');
  const counter = await CommandCounter.start(redisUrl);
  // MONITOR reports asynchronously: a ping through the monitored server marks where a phase ends.
  const settle = async () => {
    await redis.ping();
    await new Promise((r) => setTimeout(r, 200));
  };
  await settle();
  counter.take(1);
  for (let i = 0; i < COUNTED_JOBS; i++) await side.add(`ns/obj-${i}`);
  await settle();
  const perEnqueue = counter.take(COUNTED_JOBS);
  // BENCH_COUNT_WORKERS: drain with more than one worker, to see what competing workers add.
  const workers = await startWorkers(Number(process.env.BENCH_COUNT_WORKERS ?? 1), { REDIS_URL: redisUrl, PREFIX: prefix, QUEUE: name, MODE: mode === 'plain' ? 'plain' : 'ripple' }, root);
  await waitForStarts(redis, `${prefix}:bench:starts`, COUNTED_JOBS + 1);
  await settle();
  const perJobOnWorker = counter.take(COUNTED_JOBS + 1);
  counter.stop();
  await workers.stop();
  await side.close();
  await cleanup(redis, prefix);
  redis.disconnect();
  return { mode, jobs: COUNTED_JOBS, perEnqueue, perJobOnWorker };
}

async function run(mode: Mode, workers: number, redisUrl: string, jobs: number, paceMs: number) {
  const prefix = `bench-${mode}-${workers}-${Date.now()}`;
  const name = 'noop';
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const root = mode === 'baseline' ? baselineRoot! : path.resolve(here, '..');
  const pool = await startWorkers(workers, { REDIS_URL: redisUrl, PREFIX: prefix, QUEUE: name, MODE: mode === 'plain' ? 'plain' : 'ripple' }, root);
  const enqueuedAt = new Map<string, number>();
  const side = await enqueueSide(mode, root, name, redis, prefix);
  const starts = `${prefix}:bench:starts`;
  if (WARMUP_JOBS > 0) {
    await Promise.all(Array.from({ length: 16 }, async (_, lane) => { for (let i = lane; i < WARMUP_JOBS; i += 16) await side.add(`ns/warmup-${i}`); }));
    await waitForStarts(redis, starts, WARMUP_JOBS);
    await redis.del(starts);
  }
  const redisCpu0 = await redisCpuSeconds(redis);
  const cpu0 = process.cpuUsage();
  const t0 = nowMs();
  // Distinct keys: this measures raw throughput, not coalescing (which only makes Ripple do less).
  const add = async (key: string) => {
    enqueuedAt.set(key, nowMs());
    await side.add(key);
  };
  if (paceMs > 0) {
    // Paced below capacity: latency without a backlog in front of each job.
    for (let i = 0; i < jobs; i++) {
      await add(`ns/obj-${i}`);
      await new Promise((r) => setTimeout(r, paceMs));
    }
  } else {
    // A burst from 16 concurrent producers: throughput, with the backlog's latency.
    await Promise.all(Array.from({ length: 16 }, async (_, lane) => { for (let i = lane; i < jobs; i += 16) await add(`ns/obj-${i}`); }));
  }
  await waitForStarts(redis, starts, jobs);
  const elapsedS = (nowMs() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const redisCpuS = (await redisCpuSeconds(redis)) - redisCpu0;
  const latencies = (await redis.lrange(starts, 0, -1)).map((line) => {
    const [key, at] = line.split('|');
    return Number(at) - enqueuedAt.get(key!)!;
  });
  // Includes the workers' start-up and warm-up (the same for both sides), not only the run.
  const workerCpuS = await pool.stop();
  await side.close();
  await cleanup(redis, prefix);
  redis.disconnect();
  return {
    mode,
    workers,
    jobs,
    perSecond: round(jobs / elapsedS, 1),
    p50Ms: round(percentile(latencies, 50)),
    p99Ms: round(percentile(latencies, 99)),
    cpuSeconds: { producer: round((cpu.user + cpu.system) / 1e6), workers: round(workerCpuS), redis: round(redisCpuS) },
  };
}

const redis = await startRedis();
try {
  const modes: Mode[] = baselineRoot ? ['ripple', 'plain', 'baseline'] : ['ripple', 'plain'];
  const roundTrips = [];
  for (const mode of modes) {
    const rt = await countRoundTrips(mode, redis.url);
    roundTrips.push(rt);
    console.log(`round trips (${mode}): ${rt.perEnqueue.total} per enqueue ${JSON.stringify(rt.perEnqueue.byCommand)}; ${rt.perJobOnWorker.total} per job on the worker ${JSON.stringify(rt.perJobOnWorker.byCommand)}`);
  }
  const rows = [];
  // BENCH_WORKERS= (empty) counts round trips only.
  for (const workers of WORKERS.filter((n) => n > 0)) {
    // Alternate the order so neither side always runs on a warmer machine.
    const order = workers % 2 === 0 ? [...modes].reverse() : modes;
    type Run = Awaited<ReturnType<typeof run>>;
    const bursts = new Map<string, Run[]>(modes.map((m) => [m, []]));
    for (let i = 0; i < BURSTS; i++) for (const mode of i % 2 === 0 ? order : [...order].reverse()) bursts.get(mode)!.push(await run(mode, workers, redis.url, JOBS, 0));
    // Each side's median burst by throughput (the row reported with its CPU), every burst's throughput kept beside it.
    const burst = new Map<string, Run>([...bursts].map(([m, runs]) => [m, [...runs].sort((a, b) => a.perSecond - b.perSecond)[Math.floor(runs.length / 2)]!]));
    const paced = new Map<string, Run>();
    for (const mode of order) paced.set(mode, await run(mode, workers, redis.url, PACED_JOBS, 10));
    const [rb, pb, rp, pp] = [burst.get('ripple')!, burst.get('plain')!, paced.get('ripple')!, paced.get('plain')!];
    const [bb, bp] = [burst.get('baseline'), paced.get('baseline')];
    rows.push({
      workers,
      burst: { ripple: rb, plain: pb, ...(bb ? { baseline: bb } : {}) },
      burstsPerSecond: Object.fromEntries([...bursts].map(([m, runs]) => [m, runs.map((r) => r.perSecond)])),
      paced: { ripple: rp, plain: pp, ...(bp ? { baseline: bp } : {}) },
      ratio: { throughput: round(rb.perSecond / pb.perSecond), pacedP50: round(rp.p50Ms / pp.p50Ms), pacedP99: round(rp.p99Ms / pp.p99Ms) },
      ...(bb && bp ? { vsBaseline: { throughput: round(rb.perSecond / bb.perSecond), pacedP50: round(rp.p50Ms / bp.p50Ms), pacedP99: round(rp.p99Ms / bp.p99Ms) } } : {}),
    });
    const cpu = (r: typeof rb) => `${r.cpuSeconds.producer}+${r.cpuSeconds.workers}+${r.cpuSeconds.redis}`;
    const all = (m: string) => bursts.get(m)!.map((r) => r.perSecond).join(', ');
    console.log(`workers=${workers}: throughput (median of ${BURSTS}) ripple ${rb.perSecond}/s [${all('ripple')}] plain ${pb.perSecond}/s [${all('plain')}] (ratio ${round(rb.perSecond / pb.perSecond)}); paced enqueue→start p50 ${rp.p50Ms}/${pp.p50Ms} ms, p99 ${rp.p99Ms}/${pp.p99Ms} ms (ripple/plain); burst CPU s producer+workers+redis ${cpu(rb)} / ${cpu(pb)}`);
    if (bb && bp) console.log(`workers=${workers}: vs baseline ${BASELINE_REF}: throughput ${rb.perSecond}/${bb.perSecond}/s (${round(rb.perSecond / bb.perSecond)}); paced p50 ${rp.p50Ms}/${bp.p50Ms} ms, p99 ${rp.p99Ms}/${bp.p99Ms} ms; burst CPU ${cpu(bb)}`);
  }
  const result = { bench: 'queue-throughput', at: new Date().toISOString(), node: process.version, jobs: JOBS, warmupJobs: WARMUP_JOBS, bursts: BURSTS, pacedJobs: PACED_JOBS, ...(BASELINE_REF ? { baseline: BASELINE_REF } : {}), roundTrips, rows };
  writeFileSync(path.resolve(here, process.env.BENCH_OUT ?? 'results/queue-throughput.json'), `${JSON.stringify(result, null, 2)}\n`);
} finally {
  await redis.stop();
}
