import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { QueueMetrics } from '../../queue/metrics.js';
import { runScript } from '../../queue/run-script.js';
import { scriptKeys } from '../../queue/keys.js';
import { ENQUEUE } from '../../queue/scripts.js';
import { KeyedWorker } from '../../queue/worker.js';
import { parseSchedule, WorkQueue, type ScheduleResult } from '../../queue/work-queue.js';
import { upsertResync } from '../../queue/resync.js';
import { TerminalError } from '../../base/errors.js';
import { createLogger } from '../../base/log.js';
import { startProcess, stopProcess } from '../harness/processes.js';
import { waitFor } from '../harness/sandbox.js';

// The five workqueue contracts of DESIGN.md, proven against the real Redis the harness started,
// with real worker processes where the contract is about processes.
const log = createLogger('queue-test', 'warn');
let redisUrl: string;
let redis: Redis;
const open: Array<{ close(): Promise<void> }> = [];
const children: ChildProcess[] = [];

beforeAll(() => {
  redisUrl = inject('redisUrl');
  redis = new Redis(redisUrl);
});
afterEach(async () => {
  for (const c of children.splice(0)) await stopProcess(c, 'SIGKILL');
  for (const o of open.splice(0).reverse()) await o.close();
});
afterAll(() => redis.disconnect());

function uniquePrefix(label: string): string {
  return `qt-${label}-${Math.random().toString(36).slice(2, 8)}`;
}
function conn(): Redis {
  const c = new Redis(redisUrl, { maxRetriesPerRequest: null });
  open.push({ close: async () => void c.disconnect() });
  return c;
}
function makeQueue(prefix: string, name = 'fn'): WorkQueue {
  const q = new WorkQueue({ name, connection: conn(), prefix });
  open.push(q);
  return q;
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('keyed work queue', () => {
  it('storm: 4 worker processes, 50 keys, 5000 events — no overlap, no lost update, coalesced', async () => {
    const prefix = uniquePrefix('storm');
    const queue = makeQueue(prefix, 'storm');
    const env = { REDIS_URL: redisUrl, PREFIX: prefix, QUEUE: 'storm', WORK_MS: '15', CONCURRENCY: '4' };
    for (let i = 0; i < 4; i++) children.push(await startProcess('test/fixtures/storm-worker.ts', env));

    const keys = Array.from({ length: 50 }, (_, i) => `ns/obj-${i}`);
    let sent = 0;
    while (sent < 5000) {
      // A burst of up to 200 events on random keys, then a random pause.
      const burst = Math.min(5000 - sent, 1 + Math.floor(Math.random() * 200));
      await Promise.all(
        Array.from({ length: burst }, async () => {
          const key = keys[Math.floor(Math.random() * keys.length)]!;
          await redis.incr(`${prefix}:storm:version:${key}`); // the object changes…
          await queue.add(key); // …and its watch event is enqueued
        }),
      );
      sent += burst;
      await sleep(Math.floor(Math.random() * 20));
    }

    // Settled: nothing pending, nothing active, nothing dirty.
    await waitFor('the queue to drain', 60_000, async () => {
      const k = queue.keys;
      const [due, active, dirty] = await Promise.all([redis.zcard(k.due), redis.hlen(k.active), redis.zcard(k.dirty)]);
      return due + active + dirty === 0;
    }, 200);

    for (const key of keys) {
      const version = (await redis.get(`${prefix}:storm:version:${key}`)) ?? '0';
      const runs = await redis.lrange(`${prefix}:storm:runs:${key}`, 0, -1);
      if (version === '0') continue;
      // The last reconcile of every key saw its last event (it started after it): no lost update.
      expect(runs.at(-1)?.split(':')[0], `last reconcile of ${key}`).toBe(version);
    }
    expect(Number(await redis.get(`${prefix}:storm:overlaps`) ?? '0')).toBe(0);
    const reconciles = Number(await redis.get(`${prefix}:storm:reconciles`));
    expect(reconciles).toBeGreaterThan(0);
    expect(reconciles).toBeLessThan(5000 / 2); // coalescing: far fewer reconciles than events
    // Work really spread over the processes.
    const pids = new Set<string>();
    for (const key of keys) for (const run of await redis.lrange(`${prefix}:storm:runs:${key}`, 0, -1)) pids.add(run.split(':')[1]!);
    expect(pids.size).toBe(4);
  });

  it('a worker killed with SIGKILL mid-reconcile loses nothing: the key is reconciled again', async () => {
    const prefix = uniquePrefix('kill');
    const queue = makeQueue(prefix, 'kill');
    const base = { REDIS_URL: redisUrl, PREFIX: prefix, QUEUE: 'kill', LOCK_MS: '1500', STALLED_MS: '500', CONCURRENCY: '1' };
    const victim = await startProcess('test/fixtures/storm-worker.ts', { ...base, SLOW_KEY: 'ns/slow', SLOW_MS: '60000' });
    children.push(victim);
    await redis.incr(`${prefix}:storm:version:ns/slow`);
    await queue.add('ns/slow');
    await waitFor('the slow reconcile to start', 10_000, async () => (await redis.get(`${prefix}:storm:slow-started`)) !== null);
    // Another event arrives while it runs; then the process dies without finishing.
    await redis.incr(`${prefix}:storm:version:ns/slow`);
    expect((await queue.add('ns/slow')).action).toBe('deferred');
    await stopProcess(victim, 'SIGKILL');

    const survivor = await startProcess('test/fixtures/storm-worker.ts', { ...base, SLOW_KEY: 'none' });
    children.push(survivor);
    const runs = await waitFor('the key to be reconciled again after the kill', 20_000, async () => {
      const r = await redis.lrange(`${prefix}:storm:runs:ns/slow`, 0, -1);
      return r.some((x) => x.startsWith('2:')) ? r : undefined;
    });
    expect(runs[0]).toMatch(/^1:/);
    expect(runs.at(-1)).toMatch(/^2:/);
    await waitFor('the queue to settle', 10_000, async () => (await redis.hlen(queue.keys.active)) === 0);
  });

  it('retries a failing key with growing delays, then succeeds; a terminal error is not retried', async () => {
    const prefix = uniquePrefix('backoff');
    const queue = makeQueue(prefix);
    const attempts: Array<{ key: string; at: number }> = [];
    const worker = new KeyedWorker({
      queue,
      connection: conn(),
      prefix,
      backoff: { baseMs: 50, maxMs: 10_000 },
      log,
      reconcile: async ({ key }) => {
        attempts.push({ key, at: Date.now() });
        if (key === 'ns/bad-spec') throw new TerminalError('spec.replicas must be >= 0');
        if (attempts.filter((a) => a.key === key).length <= 4) throw new Error('apiserver said 500');
      },
    });
    open.push(worker);
    await queue.add('ns/flaky');
    await queue.add('ns/bad-spec');
    await waitFor('five attempts of the flaky key', 20_000, async () => attempts.filter((a) => a.key === 'ns/flaky').length >= 5);
    await sleep(1000);
    const flaky = attempts.filter((a) => a.key === 'ns/flaky').map((a) => a.at);
    expect(flaky).toHaveLength(5); // 4 failures, then success, then nothing more
    const gaps = flaky.slice(1).map((t, i) => t - flaky[i]!);
    // Each gap is at least its own backoff, 50·2^i ms (50, 100, 200, 400): the floor doubles per failure.
    // Gaps are compared with their floors, not with each other: a loaded machine starts a retry late by
    // a varying amount (seen: [76, 209, 212, 505]), which can make a later gap shorter than an earlier one.
    gaps.forEach((gap, i) => expect(gap, `gap ${i} of ${JSON.stringify(gaps)}`).toBeGreaterThanOrEqual(50 * 2 ** i - 5));
    expect(attempts.filter((a) => a.key === 'ns/bad-spec')).toHaveLength(1);
    expect(await redis.hget(queue.keys.failures, 'ns/flaky')).toBeNull();
  });

  it('requeueAfter schedules one later reconcile, and an earlier request wins', async () => {
    const prefix = uniquePrefix('requeue');
    const queue = makeQueue(prefix);
    const runs: number[] = [];
    const worker = new KeyedWorker({
      queue,
      connection: conn(),
      prefix,
      log,
      reconcile: async () => {
        runs.push(Date.now());
        return runs.length === 1 ? { requeueAfterMs: 60_000 } : undefined;
      },
    });
    open.push(worker);
    await queue.add('ns/a');
    await waitFor('the first reconcile', 5000, async () => runs.length === 1);
    await waitFor('the requeue to be pending', 5000, async () => (await redis.zscore(queue.keys.due, 'ns/a')) !== null);
    const requested = Date.now();
    const r = await queue.add('ns/a'); // an event now: earlier than the pending requeue
    expect(r.action).toBe('reschedule');
    await waitFor('the second reconcile', 5000, async () => runs.length === 2);
    expect(runs[1]! - requested).toBeLessThan(2000);
    // The 60 s requeue was moved, not duplicated: nothing is pending any more.
    expect(await redis.zcard(queue.keys.due)).toBe(0);
    expect(await queue.bull.getDelayedCount()).toBe(0);
  });

  it('coalesces events for a waiting key into one reconcile', async () => {
    const prefix = uniquePrefix('coalesce');
    const queue = makeQueue(prefix);
    const results = [];
    for (let i = 0; i < 10; i++) results.push((await queue.add('ns/x')).action);
    expect(results[0]).toBe('add');
    expect(results.slice(1).every((a) => a === 'coalesced')).toBe(true);
    expect(await queue.bull.getWaitingCount()).toBe(1);
    let runs = 0;
    const worker = new KeyedWorker({ queue, connection: conn(), prefix, log, reconcile: async () => void runs++ });
    open.push(worker);
    await waitFor('the reconcile', 5000, async () => runs === 1);
    await sleep(300);
    expect(runs).toBe(1);
  });

  it('the resync tick enqueues every primary object, and its interval can change while running', async () => {
    const prefix = uniquePrefix('resync');
    const queue = makeQueue(prefix);
    const seen = new Set<string>();
    let ticks = 0;
    const worker = new KeyedWorker({
      queue,
      connection: conn(),
      prefix,
      log,
      reconcile: async ({ key }) => void seen.add(key),
      resync: async () => {
        ticks++;
        for (const k of ['ns/a', 'ns/b', 'ns/c']) await queue.add(k, 0, 'resync');
        return 3;
      },
    });
    open.push(worker);
    await upsertResync(queue, 60_000);
    await waitFor('the first tick', 5000, async () => ticks >= 1);
    await waitFor('every object reconciled', 5000, async () => seen.size === 3);
    await upsertResync(queue, 1000);
    const before = ticks;
    await waitFor('ticks at the new interval', 5000, async () => ticks >= before + 2);
    const schedulers = await queue.bull.getJobSchedulers();
    expect(schedulers).toHaveLength(1);
    expect(schedulers[0]?.every).toBe(1000);
  });

  it('a reconcile past its deadline is aborted through its signal, counted, and retried with backoff once its lease ran out', async () => {
    const prefix = uniquePrefix('timeout');
    const queue = makeQueue(prefix);
    const registry = new Registry();
    const runs: Array<{ start: number; end?: number; aborted?: string }> = [];
    const worker = new KeyedWorker({
      queue,
      connection: conn(),
      prefix,
      log,
      metrics: new QueueMetrics(registry),
      reconcileTimeoutMs: 300,
      // The key stays held until the aborted claim's lease has run out, settled or not (docs/kernel.md,
      // "Effects"): a write it sent just before may still be on its way. A short lease keeps the test short.
      lockDurationMs: 1_000,
      backoff: { baseMs: 50, maxMs: 1000 },
      reconcile: async ({ signal }) => {
        const run: (typeof runs)[number] = { start: Date.now() };
        runs.push(run);
        // The first reconcile would wait for ever, but honours its signal as the handler contract asks.
        if (runs.length === 1) await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
        run.aborted = signal.aborted ? String(signal.reason) : undefined;
        run.end = Date.now();
      },
    });
    open.push(worker);
    await queue.add('ns/hang');
    await waitFor('the retry after the deadline', 10_000, async () => runs.length >= 2);
    expect(runs[0]!.aborted).toBe('deadline');
    // The retry starts only after the aborted run settled (no overlap), and after its backoff.
    expect(runs[1]!.start).toBeGreaterThanOrEqual(runs[0]!.end! + 45);
    expect(runs[1]!.start - runs[0]!.start).toBeGreaterThanOrEqual(300 + 45);
    // …and only once the lease the aborted run held had run out (no renewal after the abort at 300 ms).
    expect(runs[1]!.start - runs[0]!.start).toBeGreaterThanOrEqual(900);
    await waitFor('the key to settle', 5_000, async () => (await redis.hlen(queue.keys.active)) + (await redis.zcard(queue.keys.due)) === 0);
    expect(await redis.hget(queue.keys.failures, 'ns/hang')).toBeNull();
    const timeouts = await registry.getSingleMetric('controller_runtime_reconcile_timeouts_total')?.get();
    expect(timeouts?.values).toEqual([expect.objectContaining({ labels: { controller: 'fn' }, value: 1 })]);
    expect(runs).toHaveLength(2);
  });

  it('a reconcile that ignores its signal keeps the key until its lease runs out; then the retry takes over and the late finisher is fenced out', async () => {
    const prefix = uniquePrefix('ignore');
    const queue = makeQueue(prefix);
    const runs: Array<{ start: number; token: string }> = [];
    let release: () => void = () => undefined;
    const worker = new KeyedWorker({
      queue,
      connection: conn(),
      prefix,
      log,
      lockDurationMs: 1000,
      reconcileTimeoutMs: 200,
      backoff: { baseMs: 10, maxMs: 100 },
      concurrency: 2,
      reconcile: async ({ token }) => {
        runs.push({ start: Date.now(), token });
        if (runs.length === 1) await new Promise<void>((resolve) => (release = resolve));
      },
    });
    open.push(worker);
    const t0 = Date.now();
    await queue.add('ns/stuck');
    await waitFor('the retry after the lease ran out', 10_000, async () => runs.length >= 2);
    // Deadline 200 ms, then the worker waits for the lease (1 s, no longer renewed) before giving up the key.
    expect(runs[1]!.start - t0).toBeGreaterThanOrEqual(1000);
    expect(Number(runs[1]!.token)).toBeGreaterThan(Number(runs[0]!.token));
    // The abandoned handler finishing now changes nothing: its key is someone else's or free.
    release();
    await sleep(300);
    expect(runs).toHaveLength(2);
    await waitFor('the key to settle', 5_000, async () => (await redis.hlen(queue.keys.active)) + (await redis.zcard(queue.keys.due)) === 0);
  });

  it('the follow-up of a release survives failing adds: apply is retried', async () => {
    const prefix = uniquePrefix('apply');
    const queue = makeQueue(prefix);
    const apply = queue.apply.bind(queue);
    let failures = 0;
    // BullMQ's add failing right after RELEASE succeeded (a dropped connection): twice, then it works.
    queue.apply = async (key: string, result: ScheduleResult, reason: string) => {
      if (reason === 'requeue' && failures < 2) {
        failures++;
        throw new Error('Connection is closed.');
      }
      return apply(key, result, reason);
    };
    const runs: number[] = [];
    const worker = new KeyedWorker({
      queue,
      connection: conn(),
      prefix,
      log,
      applyRetry: { attempts: 4, baseMs: 20, maxMs: 100 },
      reconcile: async () => {
        runs.push(Date.now());
        return runs.length === 1 ? { requeueAfterMs: 50 } : undefined;
      },
    });
    open.push(worker);
    await queue.add('ns/a');
    await waitFor('the requeued reconcile', 5_000, async () => runs.length === 2);
    expect(failures).toBe(2);
    await sleep(300);
    expect(runs).toHaveLength(2);
  });

  it('two reschedules of one pending job landing in the wrong order: the earlier request still wins', async () => {
    const prefix = uniquePrefix('reorder');
    const queue = makeQueue(prefix);
    const keys = scriptKeys(queue.keys);
    const runs: number[] = [];
    await queue.add('ns/r', 60_000, 'requeue'); // a requeueAfter of a minute is pending
    // Two requests race: one wants the key in 30 s, the other in 0.5 s. Their scripts run in that order,
    // but the later request's move lands first and the earlier one's last.
    const in30s = parseSchedule(await runScript(conn(), ENQUEUE, keys, ['ns/r', '30000', queue.keys.jobKeyPrefix]));
    const soon = parseSchedule(await runScript(conn(), ENQUEUE, keys, ['ns/r', '500', queue.keys.jobKeyPrefix]));
    expect([in30s.action, soon.action]).toEqual(['reschedule', 'reschedule']);
    await queue.apply('ns/r', soon, 'event');
    await queue.apply('ns/r', in30s, 'event');
    const t0 = Date.now();
    const worker = new KeyedWorker({ queue, connection: conn(), prefix, log, reconcile: async () => void runs.push(Date.now()) });
    open.push(worker);
    await waitFor('the reconcile the earliest request asked for', 10_000, async () => runs.length >= 1);
    expect(runs[0]! - t0).toBeLessThan(5_000);
  });

  it('a job added late for a key whose pending job is waiting does not run the key twice', async () => {
    const prefix = uniquePrefix('late');
    const queue = makeQueue(prefix);
    const keys = scriptKeys(queue.keys);
    // An enqueuer ran its script and stalled past the pending grace before adding its job…
    const stalled = parseSchedule(await runScript(conn(), ENQUEUE, keys, ['ns/l', '0', queue.keys.jobKeyPrefix]));
    await redis.hset(queue.keys.pendingSince, 'ns/l', '0'); // …as if 10 s had passed
    // …meanwhile another event recorded a new pending job for the key, due in 300 ms.
    const current = await queue.add('ns/l', 300);
    expect(current.jobId).not.toBe(stalled.jobId);
    await queue.apply('ns/l', stalled, 'event'); // the stalled enqueuer wakes and adds its old id
    const runs: string[] = [];
    const worker = new KeyedWorker({ queue, connection: conn(), prefix, log, reconcile: async ({ reason }) => void runs.push(reason) });
    open.push(worker);
    await waitFor('the key to settle', 10_000, async () => runs.length >= 1 && (await redis.zcard(queue.keys.due)) + (await redis.hlen(queue.keys.active)) === 0);
    await sleep(500);
    expect(runs).toHaveLength(1);
  });

  it('the resync tick sweeps orphaned entries and still runs the keys they stood for', async () => {
    const prefix = uniquePrefix('sweep');
    const queue = makeQueue(prefix);
    const k = queue.keys;
    const runs: string[] = [];
    // What crashes leave behind: a pending id whose job never came (past the grace), a claim whose
    // lease ended long ago, a dirty mark without a holder, a due time without a pending id, a failure
    // count for a key with nothing scheduled.
    await redis.hset(k.pending, 'ns/p', 'ns/p#999');
    await redis.hset(k.pendingSince, 'ns/p', '0');
    await redis.zadd(k.due, '0', 'ns/p');
    await redis.hset(k.active, 'ns/a', '5|ns/a#5');
    await redis.zadd(k.leases, '1', 'ns/a');
    await redis.zadd(k.dirty, '0', 'ns/d');
    await redis.zadd(k.due, '0', 'ns/u');
    await redis.hset(k.failures, 'ns/f', '3');
    const worker = new KeyedWorker({ queue, connection: conn(), prefix, log, reconcile: async ({ key }) => void runs.push(key), resync: async () => 0 });
    open.push(worker);
    await upsertResync(queue, 1000);
    await waitFor('every orphan swept and its key reconciled', 10_000, async () => ['ns/p', 'ns/a', 'ns/d', 'ns/u'].every((key) => runs.includes(key)));
    await waitFor('the structures to hold nothing', 10_000, async () => {
      const n = await Promise.all([redis.hlen(k.pending), redis.hlen(k.pendingSince), redis.zcard(k.due), redis.hlen(k.active), redis.zcard(k.leases), redis.zcard(k.dirty), redis.hlen(k.failures)]);
      return n.every((x) => x === 0);
    });
    expect(runs).not.toContain('ns/f');
  });

  it('an enqueue racing another between its script and its add coalesces into the one job', async () => {
    const prefix = uniquePrefix('grace');
    const queue = makeQueue(prefix);
    const k = queue.keys;
    const keys = scriptKeys(k);
    // The first enqueue has run its script (the pending id is recorded) but not yet its bull.add.
    const first = parseSchedule(await runScript(conn(), ENQUEUE, keys, ['ns/r', '0', k.jobKeyPrefix]));
    expect(first.action).toBe('add');
    // A concurrent enqueue: not a second id, but the same one, which it adds itself.
    const second = await queue.add('ns/r');
    expect(second).toMatchObject({ action: 'add', jobId: first.jobId, readd: true });
    await queue.apply('ns/r', first, 'event'); // the first add lands late: BullMQ ignores the known id
    expect((await queue.add('ns/r')).action).toBe('coalesced');
    expect(await queue.bull.getWaitingCount()).toBe(1);

    // A recorded id whose job never came (its enqueuer died) stops counting after the grace period.
    const orphan = parseSchedule(await runScript(conn(), ENQUEUE, keys, ['ns/o', '0', k.jobKeyPrefix]));
    await redis.hset(k.pendingSince, 'ns/o', '0');
    const fresh = await queue.add('ns/o');
    expect(fresh.action).toBe('add');
    expect(fresh.jobId).not.toBe(orphan.jobId);
    expect(fresh.readd).toBeUndefined();

    let runs = 0;
    const worker = new KeyedWorker({ queue, connection: conn(), prefix, log, reconcile: async () => void runs++ });
    open.push(worker);
    await waitFor('both keys reconciled', 5_000, async () => runs === 2);
    await sleep(300);
    expect(runs).toBe(2);
  });
});
