import { describe, expect, it } from 'vitest';
import { TcpProxy } from '../harness/tcp-proxy.js';
import { waitFor } from '../harness/sandbox.js';
import { expectClean, FaultCase } from './harness/fault-case.js';
import { stopAfterEach } from './harness/stop-after-each.js';
import { RedisProcess } from './harness/redis-process.js';

// A network partition between one worker and Redis: the worker reaches Redis through a TCP proxy that
// cuts every connection and refuses new ones for longer than the lease, mid-reconcile, mid-storm. Redis
// and the other workers carry on; the cut-off worker's late commit must be refused when it gets through.
const track = stopAfterEach();

describe('fault: worker cut from Redis by a TCP proxy', () => {
  it('one of 3 workers partitioned ≥ 4 s (lease 1 s) mid-reconcile: fenced out, no overlap, nothing lost or leaked', async () => {
    const redis = track(await RedisProcess.start());
    const proxy = track(new TcpProxy({ host: '127.0.0.1', port: redis.port }));
    await proxy.start();
    const c = track(new FaultCase('proxy', redis.url, 30));
    const slowKey = c.storm.keys[0]!;
    const env = { LOCK_MS: '1000', STALLED_MS: '500', CONCURRENCY: '4', WORK_MS: '20', SLOW_KEY: slowKey, SLOW_ASYNC_MS: '5000' };
    // The partitioned worker starts alone so the slow reconcile is surely its own.
    const victim = await c.startWorker({ ...env, QUEUE_URL: `redis://127.0.0.1:${proxy.port}` });
    await c.storm.event(slowKey);
    expect((await c.slowWorker()).pid).toBe(victim.pid);
    // Cut while the slow reconcile runs (5 s), then bring up the others, who take the key over.
    proxy.cut();
    const cutAt = Date.now();
    try {
      for (let i = 0; i < 2; i++) await c.startWorker(env);
      const storm = c.storm.run(2500);
      await c.takenOver(slowKey, victim.pid, cutAt);
      await waitFor('4 s of partition', 10_000, async () => Date.now() - cutAt >= 4_000);
      proxy.resume();
      await storm;
    } finally {
      proxy.resume();
    }
    await waitFor('the partitioned reconcile to end', 60_000, async () => (await c.world.get(`${c.prefix}:slow-done`)) ?? undefined);

    const report = await c.check(90_000);
    expect(await c.world.get(`${c.prefix}:slow-done`)).toBe('fenced-out');
    expect(report.events).toBeGreaterThanOrEqual(2500);
    expectClean(report);
  });
});
