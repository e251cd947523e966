import { Cluster, Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createRedis, type RedisClient } from '../../queue/connection.js';
import { scanKeys } from '../../queue/scan.js';
import { KeyedWorker } from '../../queue/worker.js';
import { WorkQueue } from '../../queue/work-queue.js';
import { scanPage } from '../../ops/scan-page.js';
import { loadProcessConfig } from '../../runtime/config.js';
import { eventRequestsKey, pendingEventObjects } from '../../runtime/event-sink.js';
import { createLogger } from '../../base/log.js';
import { waitFor } from '../harness/sandbox.js';
import { RedisCluster } from './harness/redis-cluster.js';
import { SentinelCluster } from './harness/sentinel.js';

// The REDIS_URL forms a process is started with, on real servers: the URL passes the process config,
// createRedis makes the right client, and a keyed queue reconciles through it; on a cluster, what scans
// the keyspace sees every primary.
const log = createLogger('redis-url', 'fatal');
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Enqueues `keys` on queue `name` and waits until an in-process worker reconciled each of them. */
async function reconcileThrough(url: string, prefix: string, name: string, keys: string[]): Promise<Set<string>> {
  const producer = createRedis(url, { maxRetriesPerRequest: null });
  const consumer = createRedis(url, { maxRetriesPerRequest: null });
  const queue = new WorkQueue({ name, connection: producer, prefix, log });
  const done = new Set<string>();
  const worker = new KeyedWorker({ queue, connection: consumer, prefix, concurrency: 4, log, reconcile: async ({ key }) => void done.add(key) });
  cleanups.push(async () => {
    await worker.close();
    await queue.close();
    producer.disconnect();
    consumer.disconnect();
  });
  for (const k of keys) await queue.add(k);
  await waitFor(`every key of ${name} to be reconciled`, 60_000, async () => done.size === keys.length);
  return done;
}

describe('REDIS_URL forms on real servers', () => {
  it('redis+sentinel:// naming three Sentinels: accepted at start, and a queue reconciles through the primary they name', async () => {
    const sentinels = await SentinelCluster.start();
    cleanups.push(() => sentinels.stop());
    expect(loadProcessConfig({ REDIS_URL: sentinels.url }).REDIS_URL).toBe(sentinels.url);
    const probe = createRedis(sentinels.url);
    cleanups.push(async () => void probe.disconnect());
    expect(probe).toBeInstanceOf(Redis);
    // Through the Sentinels, the client talks to the primary: writes are accepted.
    expect(await probe.set('redis-url:probe', '1')).toBe('OK');

    const keys = Array.from({ length: 10 }, (_, i) => `ns/s-${i}`);
    expect([...(await reconcileThrough(sentinels.url, 'url-sentinel', 'sentinel-fn', keys))].sort()).toEqual([...keys].sort());
  });

  it('redis+cluster://: accepted at start; queues of two functions reconcile; scans and pages see the keys of every primary', async () => {
    const cluster = await RedisCluster.start();
    cleanups.push(() => cluster.stop());
    expect(loadProcessConfig({ REDIS_URL: cluster.url }).REDIS_URL).toBe(cluster.url);
    const redis: RedisClient = createRedis(cluster.url, { maxRetriesPerRequest: null });
    cleanups.push(async () => void redis.disconnect());
    expect(redis).toBeInstanceOf(Cluster);

    for (const fn of ['fn-one', 'fn-two']) {
      const keys = Array.from({ length: 10 }, (_, i) => `ns/${fn}-${i}`);
      expect([...(await reconcileThrough(cluster.url, 'url-cluster', fn, keys))].sort()).toEqual([...keys].sort());
    }

    // emit-events' pending request lists: one per object, spread over the slots of all three primaries.
    const objects = Array.from({ length: 60 }, (_, i) => `ns/Pod/o-${String(i).padStart(2, '0')}`);
    for (const o of objects) await redis.rpush(eventRequestsKey('url-cluster', o), '{}');
    const owners = new Set<number>();
    for (const o of objects) owners.add((await cluster.primaryOf(eventRequestsKey('url-cluster', o))).port);
    expect(owners.size).toBe(3);

    expect((await pendingEventObjects(redis, 'url-cluster')).sort()).toEqual(objects);
    expect((await scanKeys(redis, eventRequestsKey('url-cluster', '*'))).length).toBe(60);
    // The ops server's paged listing: small pages across the primaries, every key exactly once.
    const paged: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const page = await scanPage(redis, { match: eventRequestsKey('url-cluster', '*'), limit: 7, count: 5, maxScans: 3, ...(token ? { continue: token } : {}) });
      paged.push(...page.keys);
      token = page.continue;
      pages++;
    } while (token && pages < 200);
    expect(paged.length).toBe(60);
    expect(new Set(paged).size).toBe(60);
  });
});
