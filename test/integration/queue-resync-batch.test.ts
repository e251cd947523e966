import type { Socket } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { queueKeys } from '../../queue/keys.js';
import { ENQUEUE_BATCH } from '../../queue/work-queue.js';
import type { FunctionDefinition } from '../../runtime/function.js';
import { Resources } from '../../kube/resources.js';
import { FunctionHost } from '../../runtime/host.js';
import { createLogger } from '../../base/log.js';
import { mapToSelf } from '../../watcher/mappers.js';
import { ObjectStore } from '../../watcher/store.js';
import { Watcher } from '../../watcher/watcher.js';
import { waitFor } from '../harness/sandbox.js';
import { startMonitor } from '../../sandbox/redis-monitor.js';

// Issue 12: a resync enqueues every object; one ENQUEUE round trip per object made a 1,000-object resync
// 1,000 round trips. Measured on the real Redis the harness started: the client's writes to its socket
// (each a round trip: the client waits for the replies before it writes again) and, with MONITOR, the
// ENQUEUE scripts Redis ran (still one per key: batching changes the waiting, not the work).
const log = createLogger('queue-resync-batch-test', 'warn');
const KEYS = 1000;
let redisUrl: string;
let redis: Redis;

beforeAll(() => {
  redisUrl = inject('redisUrl');
  redis = new Redis(redisUrl);
});
afterAll(() => redis.disconnect());

/** Counts the writes made on a connection's socket from now on. */
function countWrites(client: Redis): { readonly writes: number; readonly sent: string[] } {
  const socket = client.stream;
  const counter = { writes: 0, sent: [] as string[] };
  const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
  socket.write = ((...args: unknown[]) => {
    counter.writes++;
    // The first few, for the message: what the connection sent.
    if (counter.sent.length < 6) counter.sent.push(String(args[0]).slice(0, 30).replace(/\s+/g, ' '));
    return write(...args);
  }) as Socket['write'];
  return counter;
}

/** EVALSHA commands clients send to Redis while `fn` runs (MONITOR; commands scripts run are not counted). */
async function countEvalsha(fn: () => Promise<void>): Promise<number> {
  const monitor = await startMonitor(new Redis(redisUrl));
  let n = 0;
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source !== 'lua' && String(args[0]).toLowerCase() === 'evalsha') n++;
  });
  try {
    await fn();
    // MONITOR reports asynchronously: a marker through the monitored server says everything before it arrived.
    const marker = `marker-${Math.random()}`;
    let seen = false;
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args[1] === marker) seen = true;
    });
    await redis.get(marker);
    await waitFor(`MONITOR to report the marker (counted ${n} EVALSHA so far)`, 30_000, async () => seen, 20);
    return n;
  } finally {
    monitor.disconnect();
  }
}

describe('batched enqueue', () => {
  it(`a resync of ${KEYS} keys is a handful of round trips, one ENQUEUE per key, and coalesces with the jobs it left`, async () => {
    const prefix = `qrb-${Math.random().toString(36).slice(2, 8)}`;
    const keys = Array.from({ length: KEYS }, (_, i) => `ns/obj-${i}`);
    const fn: FunctionDefinition = { name: 'batch', triggers: [], reconcile: async () => undefined, resyncKeys: async () => keys };
    const host = new FunctionHost({ kc: new KubeConfig(), redisUrl, prefix, functions: [fn], log });
    try {
      // Connected and the queue's add arguments built, so the count is the resync's own.
      await host.queue('batch').bull.waitUntilReady();
      await host.queue('batch').addArgs('ns/warm-up', 'warm-up');
      await host.redis.ping();
      const counter = countWrites(host.redis as Redis);
      let enqueued = 0;
      const scripts = await countEvalsha(async () => {
        enqueued = await host.resync('batch');
      });
      expect(enqueued).toBe(KEYS);
      // The first key's EVALSHA was refused (NOSCRIPT) and sent again as EVAL; every other key one EVALSHA.
      expect(scripts).toBe(KEYS);
      // The first key alone (twice here: Redis does not have the script yet, so NOSCRIPT, then EVAL), then one
      // write per pipeline of ENQUEUE_BATCH scripts.
      const batches = Math.ceil((KEYS - 1) / ENQUEUE_BATCH);
      expect(counter.writes, `${counter.writes} round trips for a resync of ${KEYS} keys (one pipeline is ${ENQUEUE_BATCH}): ${counter.sent.slice(0, 6).join(' / ')}…`).toBeLessThanOrEqual(batches + 2);

      const k = queueKeys(prefix, 'batch');
      expect(await redis.zcard(k.due)).toBe(KEYS);
      expect(await redis.hlen(k.pending)).toBe(KEYS);
      const bull = host.queue('batch').bull;
      expect(await bull.getWaitingCount()).toBe(KEYS);

      // Again while those jobs wait: every key coalesces into its waiting job, nothing is added.
      const again = await host.resync('batch');
      expect(again).toBe(KEYS);
      expect(await bull.getWaitingCount()).toBe(KEYS);
      expect(await redis.zcard(k.due)).toBe(KEYS);
    } finally {
      await host.close();
      const left = await redis.keys(`${prefix}:*`);
      for (let i = 0; i < left.length; i += 500) await redis.del(...left.slice(i, i + 500));
    }
  });

  it(`a new leader's replay of ${KEYS} watched objects is a handful of round trips`, async () => {
    const prefix = `qrb-${Math.random().toString(36).slice(2, 8)}`;
    const fn: FunctionDefinition = { name: 'replay', triggers: [{ resource: Resources.configMap, map: mapToSelf }], reconcile: async () => undefined };
    const host = new FunctionHost({ kc: new KubeConfig(), redisUrl, prefix, functions: [fn], log });
    // The replay reads the watcher's stores, not the API server: each store here is filled as a synced
    // list+watch would have filled it, so the count is the replay's enqueues alone.
    const store = new ObjectStore();
    for (let i = 0; i < KEYS; i++) store.apply('ADDED', { metadata: { name: `cm-${i}`, namespace: 'ns', resourceVersion: String(i + 1), uid: `uid-${i}` } });
    const watcher = new Watcher({
      kc: new KubeConfig(),
      functions: [fn],
      enqueue: (f, key, reason) => host.enqueue(f, key, reason),
      enqueueMany: (f, keys, reason) => host.enqueueMany(f, keys, reason),
      isLeader: () => true,
      log,
      source: () => ({ store, health: () => ({ resource: 'configmaps', up: true, synced: true, relists: 1 }), waitForSync: async () => undefined, stop: async () => undefined }),
    });
    watcher.start();
    try {
      await host.queue('replay').bull.waitUntilReady();
      await host.queue('replay').addArgs('ns/warm-up', 'warm-up');
      await host.redis.ping();
      const counter = countWrites(host.redis as Redis);
      expect(await watcher.replayAll()).toBe(KEYS);
      const batches = Math.ceil((KEYS - 1) / ENQUEUE_BATCH);
      expect(counter.writes, `${counter.writes} round trips for replaying ${KEYS} objects: ${counter.sent.slice(0, 6).join(' / ')}…`).toBeLessThanOrEqual(batches + 2);
      const k = queueKeys(prefix, 'replay');
      expect(await redis.zcard(k.due)).toBe(KEYS);
      expect(await host.queue('replay').bull.getWaitingCount()).toBe(KEYS);
    } finally {
      await watcher.stop();
      await host.close();
      const left = await redis.keys(`${prefix}:*`);
      for (let i = 0; i < left.length; i += 500) await redis.del(...left.slice(i, i + 500));
    }
  });
});
