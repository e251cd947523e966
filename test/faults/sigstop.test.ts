import { describe, expect, it } from 'vitest';
import { waitFor } from '../harness/sandbox.js';
import { expectClean, FaultCase } from './harness/fault-case.js';
import { stopAfterEach } from './harness/stop-after-each.js';
import { RedisProcess } from './harness/redis-process.js';

// Lock loss by a paused process: a worker SIGSTOPped mid-reconcile, mid-storm, for longer than its
// lease, then SIGCONT. Its lease runs out, another worker takes the key over; when the paused one wakes
// it finishes its handler and tries to commit, and the fence must refuse it.
const track = stopAfterEach();

describe('fault: worker SIGSTOPped past its lease', () => {
  it('3 workers, 30 keys, 2500 events; the paused holder is fenced out, nothing overlaps, lost or leaks', async () => {
    const redis = track(await RedisProcess.start());
    const c = track(new FaultCase('sigstop', redis.url, 30));
    const slowKey = c.storm.keys[0]!;
    const env = { LOCK_MS: '1000', STALLED_MS: '500', CONCURRENCY: '4', WORK_MS: '20', SLOW_KEY: slowKey, SLOW_ASYNC_MS: '3000' };
    for (let i = 0; i < 3; i++) await c.startWorker(env);

    const storm = c.storm.run(2500);
    await c.storm.event(slowKey);
    const victim = await c.slowWorker();
    victim.kill('SIGSTOP');
    const stoppedAt = Date.now();
    try {
      // Paused past the lease (1 s) until the key has a new holder, and at least 3 s in all.
      await c.takenOver(slowKey, victim.pid, stoppedAt);
      await waitFor('3 s of pause', 10_000, async () => Date.now() - stoppedAt >= 3_000);
    } finally {
      victim.kill('SIGCONT');
    }
    await storm;
    await waitFor('the paused reconcile to end', 30_000, async () => (await c.world.get(`${c.prefix}:slow-done`)) ?? undefined);

    const report = await c.check(90_000);
    expect(await c.world.get(`${c.prefix}:slow-done`)).toBe('fenced-out');
    expect(report.events).toBeGreaterThanOrEqual(2500);
    expectClean(report);
  });
});
