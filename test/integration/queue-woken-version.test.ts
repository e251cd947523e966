import { Redis } from 'ioredis';
import { z } from 'zod';
import { afterAll, afterEach, beforeAll, describe, expect, it, inject } from 'vitest';
import { scriptKeys } from '../../queue/keys.js';
import { keepVersion } from '../../queue/resource-version-order.js';
import { runScript } from '../../queue/run-script.js';
import { CLAIM, ENQUEUE, SWEEP } from '../../queue/scripts.js';
import { KeyedWorker, parseClaim, type ReconcileInfo, type ReconcileOutcome } from '../../queue/worker.js';
import { parseSchedule, WorkQueue } from '../../queue/work-queue.js';
import { httpReconcile } from '../../runtime/dispatcher.js';
import { parseReconcileRequest, serveFunction } from '../../runtime/http-function.js';
import { createLogger } from '../../base/log.js';
import { waitFor } from '../harness/sandbox.js';
import { startMonitor } from '../../sandbox/redis-monitor.js';

// Issue 15's remaining gap: a queued job carried only its key and a reason, so a handler could not know the
// resourceVersion of the event that woke it. The queue now keeps, per key, the highest version of the key's own
// object among the events that enqueued it since its last claim, and the claim hands it over
// (ReconcileInfo.minResourceVersion). Real Redis, the real scripts and a real KeyedWorker.
const log = createLogger('queue-woken-version-test', 'warn');
let redisUrl: string;
let redis: Redis;
const open: Array<{ close(): Promise<void> }> = [];

beforeAll(() => {
  redisUrl = inject('redisUrl');
  redis = new Redis(redisUrl);
});
// A run a test holds open is let go before the workers close, even when an assertion failed first.
const gates: Array<() => void> = [];
afterEach(async () => {
  for (const release of gates.splice(0)) release();
  for (const o of open.splice(0).reverse()) await o.close();
});
afterAll(() => redis.disconnect());

/** waitFor, with the last state seen in the timeout's message. */
async function waitUntil(what: string, timeoutMs: number, check: () => Promise<boolean>, state: () => Promise<string> | string): Promise<void> {
  try {
    await waitFor(what, timeoutMs, async () => (await check()) || undefined, 50);
  } catch (err) {
    throw new Error(`${err instanceof Error ? err.message : String(err)}; last seen: ${await state()}`, { cause: err });
  }
}
function conn(): Redis {
  const c = new Redis(redisUrl, { maxRetriesPerRequest: null });
  open.push({ close: async () => void c.disconnect() });
  return c;
}
const prefixes = new WeakMap<WorkQueue, string>();
function makeQueue(label: string): WorkQueue {
  const prefix = `qv-${label}-${Math.random().toString(36).slice(2, 8)}`;
  const q = new WorkQueue({ name: 'fn', connection: conn(), prefix });
  prefixes.set(q, prefix);
  open.push(q);
  return q;
}
function startWorker(queue: WorkQueue, reconcile: (info: ReconcileInfo) => Promise<ReconcileOutcome | void>): KeyedWorker {
  const worker = new KeyedWorker({ queue, connection: conn(), prefix: prefixes.get(queue), log, lockDurationMs: 10_000, backoff: { baseMs: 50, maxMs: 200 }, reconcile });
  open.push(worker);
  return worker;
}

// The two-step form (no BullMQ arguments): the scripts decide and record, no job is added and no worker runs.
/** ENQUEUE of `key` at `version` ('' for none); the id of the job it recorded. */
async function enqueueTwoStep(queue: WorkQueue, key: string, version: string): Promise<string> {
  return parseSchedule(await runScript(redis, ENQUEUE, scriptKeys(queue.keys), [key, '0', queue.keys.jobKeyPrefix, version])).jobId;
}
/** CLAIM of `key` by the job `id`, with a lease of `leaseMs` (negative: already run out). */
async function claimTwoStep(queue: WorkQueue, key: string, id: string, leaseMs: number) {
  return parseClaim(await runScript(redis, CLAIM, scriptKeys(queue.keys), [key, id, queue.keys.jobKeyPrefix, String(leaseMs)]));
}

describe('the resourceVersion a key was woken at', () => {
  it('folds to the highest while pending (5, 12, 9 → 12), and one that arrives while active goes to the follow-up', async () => {
    const queue = makeQueue('fold');
    const key = 'ns/pod-a';
    for (const v of ['5', '12', '9']) await queue.add(key, 0, 'Pod:update', v);
    expect(await redis.zcard(queue.keys.due), 'the three events coalesced into one pending job').toBe(1);

    const runs: Array<string | undefined> = [];
    let releaseFirst!: () => void;
    const firstHeld = new Promise<void>((r) => (releaseFirst = r));
    gates.push(releaseFirst);
    startWorker(queue, async (info) => {
      runs.push(info.minResourceVersion);
      if (runs.length === 1) await firstHeld;
    });
    await waitUntil('the first run to start', 30_000, async () => runs.length >= 1, () => `runs: ${JSON.stringify(runs)}`);
    expect(runs[0], 'the claim hands over the highest of 5, 12, 9').toBe('12');
    expect(await redis.hget(queue.keys.versions, key), 'the claim took the version').toBeNull();

    // While the first run is active: an event at 13 marks the key dirty and records 13 for the next run.
    await queue.add(key, 0, 'Pod:update', '13');
    expect(await redis.hget(queue.keys.versions, key)).toBe('13');
    releaseFirst();
    await waitUntil('the follow-up run', 30_000, async () => runs.length >= 2, () => `runs: ${JSON.stringify(runs)}`);
    expect(runs[1], 'the follow-up gets the version that arrived while the key was active').toBe('13');
    await waitUntil('the queue to drain', 30_000, async () => (await redis.zcard(queue.keys.due)) + (await redis.hlen(queue.keys.active)) === 0, async () => `due ${await redis.zcard(queue.keys.due)}, active ${await redis.hlen(queue.keys.active)}`);
    expect(runs, 'exactly two runs').toHaveLength(2);
    expect(await redis.hlen(queue.keys.versions), 'nothing left behind').toBe(0);
  });

  it('a job no event of the object made carries none, and a later event without a version keeps the recorded one', async () => {
    const queue = makeQueue('none');
    await queue.add('ns/plain', 0, 'resync');
    await queue.add('ns/mixed', 0, 'Pod:update', '30');
    await queue.add('ns/mixed', 0, 'Service:update');
    const runs = new Map<string, string | undefined>();
    startWorker(queue, async (info) => void runs.set(info.key, info.minResourceVersion));
    await waitUntil('both keys to run', 30_000, async () => runs.size >= 2, () => `runs: ${JSON.stringify([...runs])}`);
    expect(runs.get('ns/plain')).toBeUndefined();
    expect(runs.get('ns/mixed')).toBe('30');
  });

  it('a failed run hands its version back to the retry, folded with what came meanwhile', async () => {
    const queue = makeQueue('retry');
    await queue.add('ns/r', 0, 'Pod:update', '40');
    const runs: Array<string | undefined> = [];
    startWorker(queue, async (info) => {
      runs.push(info.minResourceVersion);
      if (runs.length === 1) {
        await queue.add('ns/r', 0, 'Pod:update', '38'); // an older event delivered late, while active
        throw new Error('transient');
      }
    });
    await waitUntil('the retry', 30_000, async () => runs.length >= 2, () => `runs: ${JSON.stringify(runs)}`);
    expect(runs).toEqual(['40', '40']);
  });

  it('a run that asks to come back (requeueAfter) hands its version to the run it asked for', async () => {
    const queue = makeQueue('requeue');
    await queue.add('ns/q', 0, 'Pod:update', '41');
    const runs: Array<string | undefined> = [];
    startWorker(queue, async (info) => {
      runs.push(info.minResourceVersion);
      // The first run finds its cache behind the version and asks to come back shortly.
      return runs.length === 1 ? { requeueAfterMs: 50 } : undefined;
    });
    await waitUntil('the requeued run', 30_000, async () => runs.length >= 2, () => `runs: ${JSON.stringify(runs)}`);
    expect(runs).toEqual(['41', '41']);
    await waitUntil('the queue to drain', 30_000, async () => (await redis.zcard(queue.keys.due)) + (await redis.hlen(queue.keys.active)) === 0, async () => `due ${await redis.zcard(queue.keys.due)}`);
    expect(await redis.hlen(queue.keys.versions), 'nothing left behind once a run succeeded').toBe(0);
  });

  it('a holder whose lease ran out (its worker died mid-run) leaves its version to the next run of the key', async () => {
    const queue = makeQueue('dead');
    const key = 'ns/d';
    const claim = await claimTwoStep(queue, key, await enqueueTwoStep(queue, key, '57'), 100);
    expect(claim.verdict).toBe('claimed');
    expect(claim.verdict === 'claimed' && claim.minResourceVersion, 'the claim took the version').toBe('57');
    // The holder dies: no RELEASE ever comes, and its lease runs out.
    await new Promise((r) => setTimeout(r, 200));
    const next = await enqueueTwoStep(queue, key, '');
    expect(await redis.hget(queue.keys.versions, key), 'given back when the dead holder was found').toBe('57');
    const again = await claimTwoStep(queue, key, next, 10_000);
    expect(again.verdict).toBe('claimed');
    expect(again.verdict === 'claimed' && again.minResourceVersion, 'the next run is woken at it').toBe('57');
  });

  it("the resync's sweep gives an expired claim's version back to its key (and re-enqueues it)", async () => {
    const queue = makeQueue('sweep');
    const key = 'ns/s';
    // A lease already past the sweep's grace, as if its holder died long ago and nothing touched the key since.
    const claim = await claimTwoStep(queue, key, await enqueueTwoStep(queue, key, '61'), -60_000);
    expect(claim.verdict === 'claimed' && claim.minResourceVersion).toBe('61');
    const swept = z.array(z.string()).parse(await runScript(redis, SWEEP, scriptKeys(queue.keys), [queue.keys.jobKeyPrefix]));
    expect(swept.slice(1)).toContain(key);
    expect(await redis.hget(queue.keys.versions, key)).toBe('61');
    expect(await redis.hkeys(queue.keys.versions), 'no claim record left').toEqual([key]);
  });

  it('an enqueue with a version is still one round trip (MONITOR: commands the producer sent)', async () => {
    const queue = makeQueue('rtt');
    await queue.add('ns/warm-up', 0, 'Pod:update', '1'); // loads the script and BullMQ's template
    const monitor = await startMonitor(redis);
    open.push({ close: async () => void monitor.disconnect() });
    const seen: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source !== 'lua') seen.push(args);
    });
    const marker = async (m: string) => {
      await redis.echo(m);
      await waitUntil(`MONITOR to report ${m}`, 10_000, async () => seen.some((a) => a[0]?.toLowerCase() === 'echo' && a[1] === m), () => `${seen.length} commands seen`);
    };
    await marker('rtt-start');
    const N = 20;
    for (let i = 0; i < N; i++) await queue.add(`ns/rtt-${i % 5}`, 0, 'Pod:update', String(100 + i));
    await marker('rtt-end');
    const from = seen.findIndex((a) => a[1] === 'rtt-start');
    const to = seen.findIndex((a) => a[1] === 'rtt-end');
    // Every command naming any key of this queue (BullMQ's or Ripple's), scripts or not.
    const prefix = prefixes.get(queue)!;
    const between = seen.slice(from + 1, to).filter((a) => a.some((x) => x.includes(prefix)));
    expect(between.map((a) => a[0]?.toLowerCase()), `commands: ${JSON.stringify(between.map((a) => a[0]))}`).toEqual(Array.from({ length: N }, () => 'evalsha'));
    // And the fold happened in that one script: each key holds its highest version.
    expect(await redis.hget(queue.keys.versions, 'ns/rtt-4')).toBe('119');
  });

  it('a dispatched job carries it to an HTTP function (ripple serve); a malformed one is refused with 400', async () => {
    const got: Array<string | undefined> = [];
    const served = await serveFunction({
      def: { name: 'fn', triggers: [], reconcile: async () => undefined },
      run: async (info) => void got.push(info.minResourceVersion),
      redis: conn(),
      prefix: `qv-http-${Math.random().toString(36).slice(2, 8)}`,
      log,
      token: 'woken-token',
      port: 0,
      hostname: '127.0.0.1',
    });
    open.push(served);
    const dispatch = httpReconcile({ fn: 'fn', url: `http://127.0.0.1:${served.port}/`, token: 'woken-token', timeoutMs: 10_000 });
    const base = { key: 'ns/p', reason: 'Pod:update', reconcileId: 'r1', log, token: '1', signal: new AbortController().signal };
    await dispatch({ ...base, minResourceVersion: '9007199254740993' });
    await dispatch({ ...base, reconcileId: 'r2' });
    expect(got).toEqual(['9007199254740993', undefined]);

    const bad = parseReconcileRequest({ 'content-type': 'application/json' }, JSON.stringify({ key: 'ns/p', minResourceVersion: 'has space' }));
    expect(bad.ok).toBe(false);
    const good = parseReconcileRequest({ 'content-type': 'application/json' }, JSON.stringify({ key: 'ns/p', minResourceVersion: '42' }));
    expect(good.ok && good.request.minResourceVersion).toBe('42');
  });

  it("the script's fold is keepVersion's, case by case (exact past 2^53; opaque or non-canonical versions: the last one wins; an empty one changes nothing)", async () => {
    const queue = makeQueue('lua');
    const keys = scriptKeys(queue.keys);
    const cases: Array<[string, string]> = [
      ['5', '12'], ['12', '5'], ['9', '10'], ['10', '9'], ['12', '12'],
      ['9007199254740993', '9007199254740992'], ['9007199254740992', '9007199254740993'],
      ['18446744073709551615', '18446744073709551614'], ['12', 'abc'], ['abc', '5'], ['abc', 'xyz'], ['-3', '2'],
      // Not canonical decimals (ordered as opaque, like kube/resource-version.ts would not misorder them), and no version.
      ['009', '10'], ['10', '009'], ['0', '7'], ['12', ''],
    ];
    for (const [i, [first, second]] of cases.entries()) {
      const key = `ns/case-${i}`;
      // The two-step form (no BullMQ arguments): the script decides and records, the test adds no job.
      for (const v of [first, second]) await runScript(redis, ENQUEUE, keys, [key, '0', queue.keys.jobKeyPrefix, v]);
      expect(await redis.hget(queue.keys.versions, key), `${first} then ${second}`).toBe(keepVersion(keepVersion(undefined, first), second) ?? null);
    }
  });
});
