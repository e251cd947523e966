import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer } from 'node:net';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createRedis, type RedisClient } from '../../queue/connection.js';
import { upsertResync } from '../../queue/resync.js';
import { RESYNC_JOB, WorkQueue } from '../../queue/work-queue.js';
import { KeyedWorker } from '../../queue/worker.js';
import { httpReconcile } from '../../runtime/dispatcher.js';
import { createLogger } from '../../base/log.js';
import { waitFor } from '../harness/sandbox.js';

// The dispatcher's side of serverless on plain Kubernetes (runtime/dispatch-hold.ts), on a real Redis and real
// sockets: a function with no pod refuses the connection. The job must go back to the queue without spending a
// retry (the key's failure count and backoff unchanged), the worker must then hold (no call loop on the refused
// port), keep the work waiting (where KEDA counts it), and send it the moment it resumes.
const log = createLogger('dispatcher-hold-test', 'error');

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const a = s.address();
  if (a === null || typeof a === 'string') throw new Error('no port');
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return a.port;
}

describe('dispatcher: a function with no ready pod', () => {
  const clients: RedisClient[] = [];
  let worker: KeyedWorker | undefined;
  let server: Server | undefined;
  afterAll(async () => {
    await worker?.close();
    server?.close();
    for (const c of clients) c.disconnect();
  });

  it('leaves its jobs in the queue without spending retries, holds instead of retrying, and sends them at once on resume', async () => {
    const url = inject('redisUrl');
    const prefix = `t-dispatch-hold-${Math.random().toString(36).slice(2, 8)}`;
    const connect = () => {
      const c = createRedis(url, { maxRetriesPerRequest: null });
      clients.push(c);
      return c;
    };
    const port = await freePort();
    const queue = new WorkQueue({ name: 'fn', connection: connect(), prefix });
    let attempts = 0;
    let resyncs = 0;
    const reconciled: Array<{ key: string; at: number }> = [];
    const call = httpReconcile({ fn: 'fn', url: `http://127.0.0.1:${port}`, timeoutMs: 5_000, onUndelivered: () => worker?.hold() });
    worker = new KeyedWorker({
      queue,
      connection: connect(),
      prefix,
      concurrency: 2,
      lockDurationMs: 5_000,
      heldPromoteMs: 200,
      log,
      reconcile: async (info) => {
        attempts++;
        return call(info);
      },
      resync: async () => {
        resyncs++;
        return 0;
      },
    });
    const redis = connect();
    const keys = ['ns/a', 'ns/b', 'ns/c'];
    // The resync tick: its first job is waiting at once and runs here; the next ones come due while held.
    await upsertResync(queue, 1_000);
    await waitFor('the first resync tick', 5_000, async () => (resyncs >= 1 ? true : undefined), 20);
    // One key has failed before: its count must neither grow nor be reset by calls that reached no pod.
    await redis.hset(queue.keys.failures, 'ns/c', '2');
    for (const k of keys) await queue.add(k, 0, 'event');

    // Refused: each job that was running goes back unrun, and the worker holds.
    await waitFor('the worker to hold after a refused call', 10_000, async () => (worker!.isHeld ? true : undefined), 20);
    const heldAttempts = attempts;
    expect(heldAttempts).toBeGreaterThanOrEqual(1);
    expect(heldAttempts).toBeLessThanOrEqual(2); // its concurrency: the calls already running, no more
    // Nothing spins while held, and the work waits in the queue: every key once, none failed.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(attempts).toBe(heldAttempts);
    const pending = [...(await queue.bull.getWaiting()), ...(await queue.bull.getDelayed())].filter((j) => j.name !== RESYNC_JOB);
    expect(pending.map((j) => (j.data as { key: string }).key).sort()).toEqual(keys);
    expect((await queue.bull.getJobCounts('failed')).failed).toBe(0);
    expect(await redis.hget(queue.keys.failures, 'ns/a')).toBeNull();
    expect(await redis.hget(queue.keys.failures, 'ns/b')).toBeNull();
    expect(await redis.hget(queue.keys.failures, 'ns/c')).toBe('2');

    // A delayed job that comes due while held becomes waiting (KEDA counts waiting jobs, not delayed ones).
    await queue.add('ns/d', 300, 'requeue');
    await waitFor('the due delayed job to be made waiting while held', 5_000, async () => ((await queue.bull.getWaiting()).some((j) => (j.data as { key?: string }).key === 'ns/d') ? true : undefined), 50);
    expect(attempts).toBe(heldAttempts);

    // The resync tick needs no function: run while held and put off by its interval, it wakes nothing (an empty
    // resync enqueues nothing, so nothing new waits).
    const resyncsWhenHeld = resyncs;
    await waitFor('the resync tick to run while held', 5_000, async () => (resyncs > resyncsWhenHeld ? true : undefined), 50);
    expect(attempts).toBe(heldAttempts);
    expect((await queue.bull.getWaiting()).filter((j) => j.name === RESYNC_JOB)).toHaveLength(0);
    expect((await queue.bull.getWaiting()).filter((j) => j.name !== RESYNC_JOB)).toHaveLength(4);

    // The function comes up: the first call after resume gets the work at once.
    server = createHttpServer((req, res) => {
      let body = '';
      req.on('data', (b: Buffer) => (body += b.toString()));
      req.on('end', () => {
        reconciled.push({ key: (JSON.parse(body) as { key: string }).key, at: Date.now() });
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'success' }));
      });
    });
    await new Promise<void>((resolve) => server!.listen(port, '127.0.0.1', resolve));
    const resumedAt = Date.now();
    worker.resume();
    await waitFor('every key to be reconciled', 10_000, async () => (new Set(reconciled.map((r) => r.key)).size === 4 ? true : undefined), 20);
    const firstAfter = Math.min(...reconciled.map((r) => r.at)) - resumedAt;
    expect(firstAfter).toBeLessThan(1_000);
    expect(new Set(reconciled.map((r) => r.key))).toEqual(new Set([...keys, 'ns/d']));
    // Success resets the count as usual; the unrun calls never added to it.
    await waitFor('the queue to drain', 5_000, async () => {
      const c = await queue.bull.getJobCounts('waiting', 'active');
      return (c.waiting ?? 0) + (c.active ?? 0) === 0 ? true : undefined;
    });
    expect(await redis.hget(queue.keys.failures, 'ns/c')).toBeNull();
    console.log(`dispatcher hold: ${heldAttempts} refused call(s) before holding, none while held; first reconcile ${firstAfter} ms after resume`);
  }, 60_000);
});
