import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerAutoscalerMetrics } from '../functions/reconcile-autoscaler/metrics/collector.js';
import { registerJobCounts } from '../ops/queue-counts.js';
import { QueueMetrics } from './metrics.js';
import { readForScrape, SCRAPE_TIMEOUT_MS } from './scrape.js';
import { WorkQueue } from './work-queue.js';

describe('readForScrape', () => {
  it("returns the read's value", async () => {
    await expect(readForScrape(async () => 3)).resolves.toBe(3);
  });

  it('returns undefined, in time, for a read that never answers (Redis down) or fails', async () => {
    const started = Date.now();
    await expect(readForScrape(() => new Promise<number>(() => undefined), 50)).resolves.toBeUndefined();
    expect(Date.now() - started).toBeLessThan(1_000);
    await expect(readForScrape(async () => Promise.reject(new Error('ECONNREFUSED')))).resolves.toBeUndefined();
    await expect(
      readForScrape(() => {
        throw new Error('sync');
      }),
    ).resolves.toBeUndefined();
  });
});

describe('scrape-time collectors while Redis is down', () => {
  // ioredis with maxRetriesPerRequest: null (what the host uses) queues commands while it cannot
  // connect, so every read below waits for as long as Redis is away unless the collector bounds it.
  let redis: Redis;
  beforeAll(() => {
    redis = new Redis('redis://127.0.0.1:1', { maxRetriesPerRequest: null, retryStrategy: () => 200 });
    redis.on('error', () => undefined);
  });
  afterAll(() => redis.disconnect());

  it('/metrics still answers, in time, without the series that need Redis', async () => {
    const registry = new Registry();
    const metrics = new QueueMetrics(registry);
    const queue = new WorkQueue({ name: 'fn', connection: redis, metrics });
    queue.bull.on('error', () => undefined);
    registerJobCounts(registry, () => [queue]);
    registerAutoscalerMetrics(registry, { redis, prefix: 'ripple', env: {} });
    const started = Date.now();
    const text = await registry.metrics();
    expect(Date.now() - started).toBeLessThan(SCRAPE_TIMEOUT_MS + 1_500);
    for (const name of ['workqueue_depth', 'bullmq_job_count', 'wva_desired_replicas']) {
      expect(text).toContain(`# TYPE ${name} gauge`);
      expect(text).not.toContain(`${name}{`);
    }
  }, 10_000);
});
