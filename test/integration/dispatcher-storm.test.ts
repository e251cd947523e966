import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { Registry } from 'prom-client';
import { KubeConfig } from '@kubernetes/client-node';
import { Response } from 'undici';
import { WorkQueue } from '../../queue/work-queue.js';
import { httpReconcile, parseDispatchTargets } from '../../runtime/dispatcher.js';
import { FunctionHost } from '../../runtime/host.js';
import { serveFunction, type ServedFunction } from '../../runtime/http-function.js';
import { createLogger } from '../../base/log.js';
import { startCli, stopCli, type RunningCli } from '../fixtures/http-cli.js';
import { definitions } from '../fixtures/http-functions.js';
import { waitFor } from '../harness/sandbox.js';

// The dispatcher is a KeyedWorker whose reconcile is an HTTP call. These prove the queue contracts
// still hold when handlers live behind HTTP: the kernel's storm through real `ripple serve` and
// `ripple worker --dispatch` processes, and the mapping of answers to queue outcomes.
const log = createLogger('dispatcher-test', process.env.LOG_LEVEL ?? 'warn');
let redisUrl: string;
let kubeconfig: string;
let redis: Redis;
const clis: RunningCli[] = [];
const closers: Array<() => Promise<void>> = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** RIPPLE_FUNCTION_TOKEN: functions require it, the dispatcher sends it. */
const TOKEN = 'dispatcher-token-for-tests-0123456789';

beforeAll(() => {
  redisUrl = inject('redisUrl');
  kubeconfig = inject('kubeconfig');
  redis = new Redis(redisUrl);
});
afterEach(async () => {
  for (const c of clis.splice(0)) await stopCli(c, 'SIGKILL');
  for (const close of closers.splice(0).reverse()) await close();
});
afterAll(() => redis.disconnect());

function uniquePrefix(label: string): string {
  return `dt-${label}-${Math.random().toString(36).slice(2, 8)}`;
}

function queue(prefix: string, name: string): WorkQueue {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const q = new WorkQueue({ name, connection, prefix });
  closers.push(async () => {
    await q.close();
    connection.disconnect();
  });
  return q;
}

async function drained(q: WorkQueue, timeoutMs: number): Promise<void> {
  await waitFor(
    'the queue to drain',
    timeoutMs,
    async () => {
      const [due, active, dirty] = await Promise.all([redis.zcard(q.keys.due), redis.hlen(q.keys.active), redis.zcard(q.keys.dirty)]);
      return due + active + dirty === 0;
    },
    200,
  );
}

describe('dispatcher', () => {
  it('storm over HTTP: 2 `ripple serve` + 2 `ripple worker --dispatch` processes, 50 keys, 3000 events — no overlap, no lost update', async () => {
    const prefix = uniquePrefix('storm');
    const common = ['--definitions', 'test/fixtures/http-functions.ts', '--kubeconfig', kubeconfig, '--redis-url', redisUrl];
    const env = { RIPPLE_PREFIX: prefix, WORK_MS: '15', CONCURRENCY: '4', PORT: '0', RIPPLE_SERVE_HOST: '127.0.0.1', RIPPLE_FUNCTION_TOKEN: TOKEN };
    const functions: RunningCli[] = [];
    for (let i = 0; i < 2; i++) {
      const f = await startCli(['serve', '--function', 'storm', ...common], env);
      clis.push(f);
      functions.push(f);
    }
    for (const f of functions) {
      clis.push(await startCli(['worker', '--dispatch', `storm=http://127.0.0.1:${f.port}/`, '--ops-port', '0', ...common], env));
    }

    const q = queue(prefix, 'storm');
    const keys = Array.from({ length: 50 }, (_, i) => `ns/obj-${i}`);
    let sent = 0;
    while (sent < 3000) {
      const burst = Math.min(3000 - sent, 1 + Math.floor(Math.random() * 150));
      await Promise.all(
        Array.from({ length: burst }, async () => {
          const key = keys[Math.floor(Math.random() * keys.length)]!;
          await redis.incr(`${prefix}:storm:version:${key}`);
          await q.add(key);
        }),
      );
      sent += burst;
      await sleep(Math.floor(Math.random() * 20));
    }
    await drained(q, 90_000);

    for (const key of keys) {
      const version = (await redis.get(`${prefix}:storm:version:${key}`)) ?? '0';
      if (version === '0') continue;
      const runs = await redis.lrange(`${prefix}:storm:runs:${key}`, 0, -1);
      expect(runs.at(-1)?.split(':')[0], `last reconcile of ${key}`).toBe(version);
    }
    expect(Number((await redis.get(`${prefix}:storm:overlaps`)) ?? '0')).toBe(0);
    const reconciles = Number(await redis.get(`${prefix}:storm:reconciles`));
    expect(reconciles).toBeGreaterThan(0);
    expect(reconciles).toBeLessThan(3000 / 2);
    // Both function processes did work (runs record the function's pid, not the dispatcher's).
    const pids = new Set<string>();
    for (const key of keys) for (const run of await redis.lrange(`${prefix}:storm:runs:${key}`, 0, -1)) pids.add(run.split(':')[1]!);
    expect(pids).toEqual(new Set(functions.map((f) => String(f.child.pid))));
    // The queue's claim alone kept keys apart: no function ever had to refuse a concurrent request.
    for (const f of functions) {
      const metrics = await (await fetch(`http://127.0.0.1:${f.port}/metrics`)).text();
      expect(metrics).toMatch(/ripple_http_function_requests_total\{function="storm",status="success"\} \d+/);
      expect(metrics).not.toMatch(/status="busy"\} [1-9]/);
      expect(metrics).not.toMatch(/status="error"\} [1-9]/);
    }
  });

  it('maps answers to queue outcomes: 5xx retried with backoff, 422 terminal, requeueAfterMs kept, timeouts transient and never overlapping, refused connections transient', async () => {
    const prefix = uniquePrefix('map');
    const fnHost = new FunctionHost({ kc: new KubeConfig(), redisUrl, prefix, functions: definitions({ SLOW_MS: '1200' }), log });
    closers.push(() => fnHost.close());
    const slowDef = fnHost.definition('slow');
    const served: ServedFunction = await serveFunction({ def: slowDef, run: (i) => fnHost.runHandler(slowDef, i), redis: fnHost.redis, prefix, log, token: TOKEN, registry: new Registry(), port: 0, hostname: '127.0.0.1' });
    closers.push(() => served.close());
    const url = `http://127.0.0.1:${served.port}/`;

    // The dispatching side: another host (another process in production) whose worker POSTs.
    const dispatcher = new FunctionHost({ kc: new KubeConfig(), redisUrl, prefix, functions: definitions(), log });
    closers.push(() => dispatcher.close());
    // A short timeout: the 1.2 s reconciles time out, are retried, and meet the still-running one.
    dispatcher.startWorkers(['slow'], { via: (def) => httpReconcile({ fn: def.name, url, token: TOKEN, timeoutMs: 400 }) });
    const q = dispatcher.queue('slow');
    const finished = () => redis.lrange(`${prefix}:slow:finished`, 0, -1);
    const started = () => redis.lrange(`${prefix}:slow:started`, 0, -1);

    await q.add('ns/requeue');
    // requeueAfterMs 60 000 from the answer's body becomes the key's next due time.
    await waitFor('the requeue to be scheduled a minute ahead', 10_000, async () => {
      if (!(await finished()).includes('ns/requeue')) return false;
      const due = await redis.zscore(q.keys.due, 'ns/requeue');
      return due !== null && Number(due) - Date.now() > 50_000;
    });
    // RELEASE records the due time before the follow-up job is added: wait for the job, then count it.
    await waitFor('the requeue job to be delayed', 5_000, async () => (await q.bull.getDelayedCount()) > 0);
    expect(await q.bull.getDelayedCount()).toBe(1);

    await q.add('ns/bad');
    await waitFor('the terminal reconcile', 10_000, async () => (await finished()).includes('ns/bad'));
    await sleep(500);
    expect((await finished()).filter((k) => k === 'ns/bad')).toHaveLength(1); // 422: not retried
    expect(await redis.zscore(q.keys.due, 'ns/bad')).toBeNull();

    // Two simulated 500s, then success: transient, retried with the key's backoff until it works.
    await q.add('ns/flaky');
    await waitFor('the flaky key to succeed', 20_000, async () => {
      const [active, pending, failures] = await Promise.all([redis.hget(q.keys.active, 'ns/flaky'), redis.zscore(q.keys.due, 'ns/flaky'), redis.hget(q.keys.failures, 'ns/flaky')]);
      return Number(await redis.get(`${prefix}:slow:flaky`)) === 3 && !active && pending === null && failures === null;
    });

    // ns/slow-once takes 1.2 s on its first attempt, against a 400 ms timeout: the dispatcher gives up
    // (transient) and retries while that attempt still runs on the function. The function's key lease
    // answers those retries 429 (transient again), so the attempts never overlap; once the slow one
    // has finished, a retry runs and succeeds.
    await q.add('ns/slow-once');
    await waitFor('the slow-once key to succeed', 30_000, async () => {
      const [active, pending, failures] = await Promise.all([redis.hget(q.keys.active, 'ns/slow-once'), redis.zscore(q.keys.due, 'ns/slow-once'), redis.hget(q.keys.failures, 'ns/slow-once')]);
      return (await finished()).filter((k) => k === 'ns/slow-once').length === 2 && !active && pending === null && failures === null;
    }, 100);
    const runs = (await started()).filter((k) => k === 'ns/slow-once');
    expect(runs).toHaveLength(2); // the timed-out attempt and the one that succeeded; the retries in between were refused
    const busy = await (await fetch(`http://127.0.0.1:${served.port}/metrics`)).text();
    expect(busy).toMatch(/ripple_http_function_requests_total\{function="slow",status="busy"\} [1-9]/);

    // A refused connection is transient too: the key keeps retrying with growing backoff.
    const dead = new FunctionHost({ kc: new KubeConfig(), redisUrl, prefix: `${prefix}-dead`, functions: definitions(), log });
    closers.push(() => dead.close());
    dead.startWorkers(['slow'], { via: (def) => httpReconcile({ fn: def.name, url: 'http://127.0.0.1:9/', token: TOKEN, timeoutMs: 1000 }) });
    await dead.queue('slow').add('ns/unreachable');
    await waitFor('failures to accumulate', 10_000, async () => Number(await redis.hget(dead.queue('slow').keys.failures, 'ns/unreachable')) >= 3);
  });

  it('parses --dispatch flags and refuses bad ones with a message', () => {
    expect(parseDispatchTargets(['a=http://a.ns.svc.cluster.local', 'b-c=https://gw:8080/function/b-c'])).toEqual([
      { fn: 'a', url: 'http://a.ns.svc.cluster.local' },
      { fn: 'b-c', url: 'https://gw:8080/function/b-c' },
    ]);
    expect(() => parseDispatchTargets(['http://x'])).toThrow(/expected <function>=<url>/);
    expect(() => parseDispatchTargets(['a=ftp://x'])).toThrow(/http/);
    expect(() => parseDispatchTargets(['a=http://x', 'a=http://y'])).toThrow(/named twice/);
    expect(() => parseDispatchTargets(['a=http://user:secret@x/'])).not.toThrow();
    expect(() => parseDispatchTargets(['a=notaurl'])).toThrow(/not a URL/);
    // A bad flag is quoted in the error without the credentials it carries.
    expect(() => parseDispatchTargets(['a=ftp://user:secret@x/'])).toThrow(/^--dispatch a=ftp:\/\/\[redacted\]@x\/: /);
  });

  it('never shows URL credentials in its errors; a 500 names the request id the function logged', async () => {
    const failing = httpReconcile({ fn: 'slow', url: 'http://wva:hunter2@127.0.0.1:9/', token: TOKEN, timeoutMs: 1000 });
    const info = { key: 'ns/x', reason: 'test', reconcileId: 'r1', log, token: '1', signal: new AbortController().signal };
    const refused = await failing(info).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(String(refused)).toContain('POST http://[redacted]@127.0.0.1:9/');
    expect(String(refused)).not.toContain('hunter2');

    const body = { status: 'error', key: 'ns/x', reconcileId: 'r1', requestId: 'req-1', error: 'reconcile failed; the function logged the cause with requestId req-1' };
    const answered500 = httpReconcile({ fn: 'slow', url: 'http://wva:hunter2@fn/', timeoutMs: 1000, fetch: async () => new Response(JSON.stringify(body), { status: 500 }) });
    await expect(answered500(info)).rejects.toThrow('POST http://[redacted]@fn/ answered 500: reconcile failed; the function logged the cause with requestId req-1');
  });
});
