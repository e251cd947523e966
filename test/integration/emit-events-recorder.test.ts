import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { makeReconcile } from '../../functions/emit-events/handler.js';
import { definition } from '../../functions/emit-events/definition.js';
import { correlateInRedis } from '../../functions/emit-events/correlation-store.js';
import { writeEvent } from '../../functions/emit-events/event-writer.js';
import { EMIT_EVENTS, queueEventSink } from '../../runtime/event-sink.js';
import { type EventSink, eventRequestSchema } from '../../runtime/events.js';
import { FunctionHost } from '../../runtime/host.js';
import { createLogger } from '../../base/log.js';
import { countWrites, eventsAbout, objectListKey, waitSettled } from '../fixtures/emit-events-cluster.js';
import { startProcess, stopProcess } from '../harness/processes.js';
import { type TestSandbox, openSandbox, waitFor } from '../harness/sandbox.js';
import { startMonitor } from '../../sandbox/redis-monitor.js';

// emit-events against the real API server and Redis: three worker processes consume one queue and
// must behave as one client-go recorder (counting, spam filter, aggregation), and a request
// redelivered after a worker died must not be counted twice.
const log = createLogger('emit-events-test', 'warn');
const WORKER = 'test/fixtures/function-worker.ts';
let sb: TestSandbox;
let producer: FunctionHost;
const workers: ChildProcess[] = [];
const hosts: FunctionHost[] = [];

type Ref = { apiVersion: string; kind: string; namespace: string; name: string; uid: string };

function workerEnv(prefix: string, extra: Record<string, string> = {}): Record<string, string> {
  return { KUBECONFIG_PATH: inject('kubeconfig'), REDIS_URL: sb.redisUrl, PREFIX: prefix, FUNCTIONS: 'emit-events', LOCK_MS: '5000', STALLED_MS: '2000', ...extra };
}

function producerHost(prefix: string): FunctionHost {
  const host = new FunctionHost({ kc: sb.kc, redisUrl: sb.redisUrl, prefix, functions: [definition()], log, namespace: sb.namespace });
  hosts.push(host);
  return host;
}

/** What a function's ctx.events is, optionally with a clock of the test's choosing (request `at`). */
function sink(host: FunctionHost, now?: () => number): EventSink {
  return queueEventSink(host.redis, host.prefix, () => host.queue(EMIT_EVENTS), now);
}

/** A real object for the Events to be about (describe shows them; the uid is part of the keys). */
async function subject(name: string): Promise<Ref> {
  const cm = await sb.core.createNamespacedConfigMap({ namespace: sb.namespace, body: { metadata: { name } } });
  return { apiVersion: 'v1', kind: 'ConfigMap', namespace: sb.namespace, name, uid: cm.metadata?.uid ?? '' };
}

function roleEvent(ref: Ref, message = `Role prefill/prefill-0 in ServingGroup ${ref.name}-0 is now Creating`) {
  return { involvedObject: ref, type: 'Normal' as const, reason: 'RoleCreating', message, source: 'modelserving-controller' };
}

beforeAll(async () => {
  sb = await openSandbox('emit');
  producer = producerHost(sb.prefix);
  for (let i = 0; i < 3; i++) workers.push(await startProcess(WORKER, workerEnv(sb.prefix)));
});

afterAll(async () => {
  for (const w of workers.splice(0)) await stopProcess(w);
  for (const h of hosts.splice(0)) await h.close();
  await sb?.cleanup();
});

describe('emit-events on the sandbox', () => {
  it('10 identical requests through 3 worker processes make one Event with count 10', async () => {
    const ref = await subject('ten');
    const counter = await countWrites(sb.kc, sb.namespace, ref.name);
    const events = sink(producer);
    // A burst (coalesced into few reconciles) and then one at a time (each a job any worker may take).
    await Promise.all(Array.from({ length: 5 }, () => events.emit(roleEvent(ref))));
    for (let i = 0; i < 5; i++) {
      await events.emit(roleEvent(ref));
      await new Promise((r) => setTimeout(r, 60));
    }
    await waitSettled(sb.redis, sb.prefix, [objectListKey(sb.prefix, ref)]);
    const found = await waitFor('the Event to reach count 10', 30_000, async () => {
      const list = await eventsAbout(sb.kc, sb.namespace, ref.name);
      return list.length === 1 && list[0]?.count === 10 ? list : undefined;
    });
    const event = found[0]!;
    expect(event.metadata.name).toMatch(/^ten\.[0-9a-f]{16}$/);
    expect(event).toMatchObject({ type: 'Normal', reason: 'RoleCreating', source: { component: 'modelserving-controller' } });
    expect(event.involvedObject.uid).toBe(ref.uid);
    expect(Date.parse(event.lastTimestamp)).toBeGreaterThanOrEqual(Date.parse(event.firstTimestamp));
    await waitFor('the watch to report 10 writes', 10_000, async () => counter.writes >= 10);
    await new Promise((r) => setTimeout(r, 300));
    expect(counter.writes).toBe(10); // one create, nine count patches
    counter.stop();
  });

  it('200 identical requests make one Event and no more API writes than the spam burst (25)', async () => {
    const ref = await subject('flood');
    const counter = await countWrites(sb.kc, sb.namespace, ref.name);
    const events = sink(producer);
    await Promise.all(Array.from({ length: 200 }, () => events.emit(roleEvent(ref))));
    await waitSettled(sb.redis, sb.prefix, [objectListKey(sb.prefix, ref)]);
    await waitFor('the watch to report 25 writes', 10_000, async () => counter.writes >= 25);
    await new Promise((r) => setTimeout(r, 500)); // any write beyond the burst would show up by now
    const list = await eventsAbout(sb.kc, sb.namespace, ref.name);
    expect(list).toHaveLength(1);
    expect(list[0]?.count).toBe(25);
    expect(counter.writes).toBe(25);

    // As in client-go, dropped occurrences are still counted: the next write the bucket allows
    // (one token per 300 s; the request's own timestamp is the clock) carries the full count.
    await sink(producer, () => Date.now() + 300_000).emit(roleEvent(ref));
    await waitFor('the refilled write', 30_000, async () => (await eventsAbout(sb.kc, sb.namespace, ref.name))[0]?.count === 201);
    expect(await eventsAbout(sb.kc, sb.namespace, ref.name)).toHaveLength(1);
    await waitFor('the watch to report the 26th write', 10_000, async () => counter.writes >= 26);
    expect(counter.writes).toBe(26);
    counter.stop();
  });

  it('aggregates the 10th similar event within 10 minutes into a combined Event, and not after a longer gap', async () => {
    const ref = await subject('similar');
    const events = sink(producer);
    const message = (i: number) => `Role decode/decode-${i} in ServingGroup similar-0 is now Creating`;
    await Promise.all(Array.from({ length: 10 }, (_, i) => events.emit(roleEvent(ref, message(i)))));
    await waitSettled(sb.redis, sb.prefix, [objectListKey(sb.prefix, ref)]);
    let list = await eventsAbout(sb.kc, sb.namespace, ref.name);
    expect(list).toHaveLength(10);
    const combined = list.filter((e) => e.message.startsWith('(combined from similar events): '));
    expect(combined).toHaveLength(1);
    expect(combined[0]).toMatchObject({ count: 1, reason: 'RoleCreating' });

    // Further similar messages are counted on the combined Event, which shows the latest one.
    await events.emit(roleEvent(ref, message(10)));
    await waitSettled(sb.redis, sb.prefix, [objectListKey(sb.prefix, ref)]);
    list = await eventsAbout(sb.kc, sb.namespace, ref.name);
    expect(list).toHaveLength(10);
    expect(list.find((e) => e.metadata.name === combined[0]?.metadata.name)).toMatchObject({
      count: 2,
      message: `(combined from similar events): ${message(10)}`,
    });

    // Nine similar events, then a tenth more than 600 s after the ninth: the group started afresh.
    const gap = await subject('similar-gap');
    const t0 = Date.now();
    await Promise.all(Array.from({ length: 9 }, (_, i) => sink(producer, () => t0).emit(roleEvent(gap, message(i)))));
    await sink(producer, () => t0 + 601_000).emit(roleEvent(gap, message(9)));
    await waitSettled(sb.redis, sb.prefix, [objectListKey(sb.prefix, gap)]);
    const separate = await eventsAbout(sb.kc, sb.namespace, gap.name);
    expect(separate).toHaveLength(10);
    expect(separate.some((e) => e.message.startsWith('(combined'))).toBe(false);
  });

  it('a request redelivered after its worker died is replayed from its marker, not counted again', async () => {
    // Its own prefix: the shared workers must not touch this queue.
    const prefix = `${sb.prefix}-redeliver`;
    const host = producerHost(prefix);
    const ref = await subject('redelivered');
    for (let i = 0; i < 3; i++) await sink(host).emit(roleEvent(ref));
    // What a worker did before dying: correlated the head request and wrote its Event, but never
    // removed it from the list.
    const list = objectListKey(prefix, ref);
    const head = eventRequestSchema.parse(JSON.parse((await sb.redis.lindex(list, 0)) ?? 'null'));
    const first = await correlateInRedis(sb.redis, prefix, head);
    expect(first.replayed).toBe(false);
    if (first.intent.op === 'drop') throw new Error('the first request cannot be spam-filtered');
    await writeEvent(sb.kc, first.intent);

    // The job comes back: the handler runs from the head of the list again.
    const key = `${sb.namespace}/ConfigMap/${ref.name}`;
    await makeReconcile()({ key, reason: 'retry', namespace: sb.namespace, name: `ConfigMap/${ref.name}` }, host.context(log));
    expect(await sb.redis.llen(list)).toBe(0);
    const events = await eventsAbout(sb.kc, sb.namespace, ref.name);
    expect(events).toHaveLength(1);
    expect(events[0]?.count).toBe(3);
  });

  it('a worker SIGKILLed mid-drain: another takes over and every Event counts each request once', async () => {
    const prefix = `${sb.prefix}-kill`;
    const host = producerHost(prefix);
    const refs = await Promise.all(Array.from({ length: 8 }, (_, i) => subject(`killed-${i}`)));
    const perObject = 24; // under the spam burst, so every occurrence is written
    await Promise.all(refs.flatMap((ref) => Array.from({ length: perObject }, () => sink(host).emit(roleEvent(ref)))));
    const counters = await Promise.all(refs.map((ref) => countWrites(sb.kc, sb.namespace, ref.name)));

    const env = workerEnv(prefix, { LOCK_MS: '1500', STALLED_MS: '500' });
    const victim = await startProcess(WORKER, env);
    workers.push(victim);
    await Promise.race(counters.map((c) => c.firstPatch));
    await stopProcess(victim, 'SIGKILL');
    const lists = refs.map((ref) => objectListKey(prefix, ref));
    const left = (await Promise.all(lists.map((l) => sb.redis.llen(l)))).reduce((a, b) => a + b, 0);
    expect(left, 'the victim must die with requests left, or this test proves nothing').toBeGreaterThan(0);

    workers.push(await startProcess(WORKER, env));
    await waitSettled(sb.redis, prefix, lists, 90_000);
    for (const ref of refs) {
      const events = await eventsAbout(sb.kc, sb.namespace, ref.name);
      expect(events.map((e) => e.count), ref.name).toEqual([perObject]);
    }
    for (const c of counters) c.stop();
  });
  it("emitAll: a reconcile's four role transitions are one list append (in their order) and one enqueue, and four Events", async () => {
    const ref = await subject('four-roles');
    const roles = ['prefill-0', 'prefill-1', 'decode-0', 'decode-1'];
    const requests = roles.map((r) => roleEvent(ref, `Role ${r.split('-')[0]}/${r} in ServingGroup four-roles-0 is now Creating`));
    // The producer's first enqueue loads the script (EVALSHA refused, then EVAL): done before counting.
    await sink(producer).emit(roleEvent(await subject('four-roles-warm-up')));
    // On a connection of its own, listened on from the start (sandbox/redis-monitor.ts says why).
    const monitor = await startMonitor(sb.redis);
    const seen: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source !== 'lua') seen.push(args);
    });
    try {
      // MONITOR reports what it saw after it is set up: a marker makes sure it is.
      await sb.redis.echo('emit-all-start');
      await waitFor('MONITOR to report the marker', 10_000, async () => seen.some((a) => a[1] === 'emit-all-start') || undefined);
      await sink(producer).emitAll(requests);
      const list = objectListKey(sb.prefix, ref);
      await waitFor('the four Events', 30_000, async () => ((await eventsAbout(sb.kc, sb.namespace, ref.name)).length === 4 ? true : undefined));
      const from = seen.findIndex((a) => a[1] === 'emit-all-start');
      const mine = seen.slice(from + 1);
      // The emitter's writes: one RPUSH carrying all four, and one ENQUEUE (evalsha/eval) naming the object's key.
      const pushes = mine.filter((a) => a[0]?.toLowerCase() === 'rpush' && a[1] === list);
      expect(pushes.map((a) => a.length - 2)).toEqual([4]);
      // In the order given: emit-events writes a list front to back.
      expect(pushes[0]?.slice(2).map((raw) => eventRequestSchema.parse(JSON.parse(raw)).message)).toEqual(requests.map((r) => r.message));
      const objectKey = list.slice(list.indexOf('requests:') + 'requests:'.length);
      const enqueues = mine.filter((a) => /^eval(sha)?$/i.test(a[0] ?? '') && a.includes(objectKey) && a.some((x) => x === 'event-request' || x.includes('event-request')));
      expect(enqueues.length).toBe(1);
      const written = await eventsAbout(sb.kc, sb.namespace, ref.name);
      // Events have whole-second timestamps, so the list from the API server has no order to compare.
      expect(written.map((e) => e.message).sort()).toEqual(requests.map((r) => r.message).sort());
    } finally {
      monitor.disconnect();
    }
    await waitSettled(sb.redis, sb.prefix, [objectListKey(sb.prefix, ref)]);
  });

  it('the resync tick writes a request whose emitter died before enqueueing its object', async () => {
    const ref = await subject('orphan');
    // What an emitter leaves when it dies between the two steps of ctx.events.emit: the request is on
    // its object's list, but the object's key never reached the queue.
    const request = eventRequestSchema.parse({ ...roleEvent(ref), at: Date.now(), id: 'orphan-1' });
    await sb.redis.rpush(objectListKey(sb.prefix, ref), JSON.stringify(request));
    await new Promise((r) => setTimeout(r, 500));
    expect(await eventsAbout(sb.kc, sb.namespace, ref.name)).toHaveLength(0);

    expect(await producer.resync(EMIT_EVENTS)).toBeGreaterThanOrEqual(1);
    const found = await waitFor('the orphaned request to be written', 30_000, async () => {
      const list = await eventsAbout(sb.kc, sb.namespace, ref.name);
      return list.length === 1 ? list : undefined;
    });
    expect(found[0]).toMatchObject({ reason: 'RoleCreating', count: 1 });
    await waitSettled(sb.redis, sb.prefix, [objectListKey(sb.prefix, ref)]);
    expect(await sb.redis.exists(objectListKey(sb.prefix, ref))).toBe(0);
  });
});
