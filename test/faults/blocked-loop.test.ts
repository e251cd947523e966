import { describe, expect, it } from 'vitest';
import { waitFor } from '../harness/sandbox.js';
import { expectClean, FaultCase } from './harness/fault-case.js';
import { stopAfterEach } from './harness/stop-after-each.js';
import { RedisProcess } from './harness/redis-process.js';

// A handler that blocks its event loop (CPU-bound or synchronous work) for 3 s, past both its 1 s lease
// and its 1.5 s deadline, then works on 3 s more before committing. Before fencing the deadline released
// the key on purpose while the abandoned handler ran on, and its late effect landed beside the retry's.
const track = stopAfterEach();

describe('fault: handler blocks its event loop past the deadline', () => {
  it('3 workers, 30 keys, 2000 events; the late handler is fenced out, nothing overlaps, lost or leaks', async () => {
    const redis = track(await RedisProcess.start());
    const c = track(new FaultCase('blocked', redis.url, 30));
    const slowKey = c.storm.keys[0]!;
    const env = {
      LOCK_MS: '1000',
      STALLED_MS: '500',
      TIMEOUT_MS: '1500',
      CONCURRENCY: '4',
      WORK_MS: '20',
      SLOW_KEY: slowKey,
      SLOW_BLOCK_MS: '3000',
      SLOW_ASYNC_MS: '3000',
    };
    for (let i = 0; i < 3; i++) await c.startWorker(env);

    const storm = c.storm.run(2000);
    await c.storm.event(slowKey);
    const blocked = await c.slowWorker();
    await c.takenOver(slowKey, blocked.pid, Date.now());
    await storm;
    await waitFor('the blocked reconcile to end', 30_000, async () => (await c.world.get(`${c.prefix}:slow-done`)) ?? undefined);

    const report = await c.check(90_000);
    expect(await c.world.get(`${c.prefix}:slow-done`)).toBe('fenced-out');
    expect(report.events).toBeGreaterThanOrEqual(2000);
    expectClean(report);
  });
});
