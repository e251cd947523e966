// Reconciles per second and enqueue→start latency for a no-op handler at 1, 2 and 4 worker processes,
// Ripple's keyed queue beside plain BullMQ (add + Worker) in the same run, on the same Redis.
// Ripple does more per job (two extra Redis scripts: claim and release) to keep the workqueue
// contracts; the ratio says what that costs. With BENCH_BASELINE_REF (a commit) the same run also measures
// Ripple's queue as it was at that commit, so a change to the queue is compared with what it replaced.
import { fork, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { WorkQueue } from '../queue/work-queue.js';
import { startRedis } from '../sandbox/redis.js';
import { baselineCheckout } from './baseline.js';
import { nowMs, percentile, round } from './stats.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const JOBS = Number(process.env.BENCH_JOBS ?? 2000);
const WORKERS = [1, 2, 4];
const PACED_JOBS = 200;
const BASELINE_REF = process.env.BENCH_BASELINE_REF;
const baselineRoot = BASELINE_REF ? baselineCheckout(path.resolve(here, '..'), BASELINE_REF) : undefined;
type Mode = 'ripple' | 'plain' | 'baseline';

/** The baseline's WorkQueue, loaded from its checkout. */
interface EnqueueSide {
  add(key: string): Promise<unknown>;
  close(): Promise<void>;
}
async function rippleQueue(root: string, name: string, redis: Redis, prefix: string): Promise<EnqueueSide> {
  const mod: unknown = await import(path.join(root, 'queue/work-queue.ts'));
  const Ctor = (mod as { WorkQueue: new (o: { name: string; connection: Redis; prefix: string }) => EnqueueSide }).WorkQueue;
  return new Ctor({ name, connection: redis, prefix });
}

async function startWorkers(n: number, env: Record<string, string>, fixtureRoot: string): Promise<ChildProcess[]> {
  const children: ChildProcess[] = [];
  for (let i = 0; i < n; i++) {
    const child = fork(path.join(fixtureRoot, 'bench/fixtures/queue-worker.ts'), [], { env: { ...process.env, ...env }, execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code) => reject(new Error(`bench worker exited with ${code}`)));
    });
    children.push(child);
  }
  return children;
}

async function run(mode: Mode, workers: number, redisUrl: string, jobs: number, paceMs: number) {
  const prefix = `bench-${mode}-${workers}-${Date.now()}`;
  const name = 'noop';
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const root = mode === 'baseline' ? baselineRoot! : path.resolve(here, '..');
  const children = await startWorkers(workers, { REDIS_URL: redisUrl, PREFIX: prefix, QUEUE: name, MODE: mode === 'plain' ? 'plain' : 'ripple' }, root);
  const enqueuedAt = new Map<string, number>();
  const ripple = mode === 'ripple' ? new WorkQueue({ name, connection: redis, prefix }) : mode === 'baseline' ? await rippleQueue(root, name, redis, prefix) : undefined;
  const plain = mode === 'plain' ? new Queue(name, { connection: redis, prefix, defaultJobOptions: { removeOnComplete: true } }) : undefined;
  const t0 = nowMs();
  // Distinct keys: this measures raw throughput, not coalescing (which only makes Ripple do less).
  const add = async (key: string) => {
    enqueuedAt.set(key, nowMs());
    if (ripple) await ripple.add(key);
    else await plain!.add('reconcile', { key });
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
  const starts = `${prefix}:bench:starts`;
  while ((await redis.llen(starts)) < jobs) await new Promise((r) => setTimeout(r, 20));
  const elapsedS = (nowMs() - t0) / 1000;
  const latencies = (await redis.lrange(starts, 0, -1)).map((line) => {
    const [key, at] = line.split('|');
    return Number(at) - enqueuedAt.get(key!)!;
  });
  for (const c of children) c.kill('SIGTERM');
  await Promise.all(children.map((c) => new Promise((r) => c.once('exit', r))));
  await ripple?.close();
  await plain?.close();
  const keys = await redis.keys(`${prefix}:*`);
  for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500));
  redis.disconnect();
  return { mode, workers, jobs, perSecond: round(jobs / elapsedS, 1), p50Ms: round(percentile(latencies, 50)), p99Ms: round(percentile(latencies, 99)) };
}

const redis = await startRedis();
try {
  const rows = [];
  for (const workers of WORKERS) {
    // Alternate the order so neither side always runs on a warmer machine.
    const modes: Mode[] = baselineRoot ? ['ripple', 'plain', 'baseline'] : ['ripple', 'plain'];
    const order = workers % 2 === 0 ? [...modes].reverse() : modes;
    const burst = new Map<string, Awaited<ReturnType<typeof run>>>();
    const paced = new Map<string, Awaited<ReturnType<typeof run>>>();
    for (const mode of order) burst.set(mode, await run(mode, workers, redis.url, JOBS, 0));
    for (const mode of order) paced.set(mode, await run(mode, workers, redis.url, PACED_JOBS, 10));
    const [rb, pb, rp, pp] = [burst.get('ripple')!, burst.get('plain')!, paced.get('ripple')!, paced.get('plain')!];
    const [bb, bp] = [burst.get('baseline'), paced.get('baseline')];
    rows.push({
      workers,
      burst: { ripple: rb, plain: pb, ...(bb ? { baseline: bb } : {}) },
      paced: { ripple: rp, plain: pp, ...(bp ? { baseline: bp } : {}) },
      ratio: { throughput: round(rb.perSecond / pb.perSecond), pacedP50: round(rp.p50Ms / pp.p50Ms), pacedP99: round(rp.p99Ms / pp.p99Ms) },
      ...(bb && bp ? { vsBaseline: { throughput: round(rb.perSecond / bb.perSecond), pacedP50: round(rp.p50Ms / bp.p50Ms), pacedP99: round(rp.p99Ms / bp.p99Ms) } } : {}),
    });
    console.log(`workers=${workers}: throughput ripple ${rb.perSecond}/s plain ${pb.perSecond}/s (ratio ${round(rb.perSecond / pb.perSecond)}); paced enqueue→start p50 ${rp.p50Ms}/${pp.p50Ms} ms, p99 ${rp.p99Ms}/${pp.p99Ms} ms (ripple/plain)`);
    if (bb && bp) console.log(`workers=${workers}: vs baseline ${BASELINE_REF}: throughput ${rb.perSecond}/${bb.perSecond}/s (${round(rb.perSecond / bb.perSecond)}); paced p50 ${rp.p50Ms}/${bp.p50Ms} ms, p99 ${rp.p99Ms}/${bp.p99Ms} ms`);
  }
  const result = { bench: 'queue-throughput', at: new Date().toISOString(), node: process.version, jobs: JOBS, ...(BASELINE_REF ? { baseline: BASELINE_REF } : {}), rows };
  writeFileSync(path.join(here, 'results/queue-throughput.json'), `${JSON.stringify(result, null, 2)}\n`);
} finally {
  await redis.stop();
}
