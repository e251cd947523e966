import { describe, expect, it } from 'vitest';
import { waitFor } from '../harness/sandbox.js';
import { expectClean, FaultCase } from './harness/fault-case.js';
import { stopAfterEach } from './harness/stop-after-each.js';
import { RedisProcess } from './harness/redis-process.js';

// The queue's Redis killed with `kill -9` mid-storm and started again from its AOF (appendfsync always,
// so it loses nothing it acknowledged). Every Redis call in flight fails or hangs meanwhile: CLAIM,
// RELEASE, renewals, the follow-up adds, the enqueues. Nothing may be dropped or run twice at once.
const track = stopAfterEach();

/** kill -9, 2 s down (past the 2 s lease once the AOF replay is counted, so leases run out too), restart. */
async function outage(r: RedisProcess): Promise<void> {
  await r.kill9();
  const downAt = Date.now();
  await waitFor('2 s of outage', 10_000, async () => Date.now() - downAt >= 2_000);
  await r.restart();
}

describe('fault: queue Redis kill -9 and restart', () => {
  it('3 workers, 30 keys, 3000 events, Redis down 2 s mid-storm and at its end: no overlap, nothing lost, nothing leaked', async () => {
    const redis = track(await RedisProcess.start());
    const c = track(new FaultCase('redis-kill', redis.url, 30));
    const env = { LOCK_MS: '2000', STALLED_MS: '1000', CONCURRENCY: '4', WORK_MS: '30' };
    for (let i = 0; i < 3; i++) await c.startWorker(env);

    const storm = c.storm.run(3000);
    await waitFor('a third of the storm', 60_000, async () => c.storm.sent >= 1000);
    await outage(redis);
    await storm;
    // Again as the last events are sent, while workers still reconcile the backlog: no later event
    // can then make up for a follow-up (dirty re-run, retry) the outage dropped.
    await outage(redis);

    const report = await c.check(90_000);
    expect(report.events).toBeGreaterThanOrEqual(3000);
    expectClean(report);
  });
});
