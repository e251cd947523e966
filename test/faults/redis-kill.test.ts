import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../harness/sandbox.js';
import { expectClean, FaultCase } from './harness/fault-case.js';
import { RedisProcess } from './harness/redis-process.js';

// The queue's Redis killed with `kill -9` mid-storm and started again from its AOF (appendfsync always,
// so it loses nothing it acknowledged). Every Redis call in flight fails or hangs meanwhile: CLAIM,
// RELEASE, renewals, the follow-up adds, the enqueues. Nothing may be dropped or run twice at once.
let redis: RedisProcess | undefined;
let c: FaultCase | undefined;
afterEach(async () => {
  await c?.close();
  await redis?.stop();
  c = undefined;
  redis = undefined;
});

describe('fault: queue Redis kill -9 and restart', () => {
  it('3 workers, 30 keys, 3000 events, Redis down 2 s mid-storm: no overlap, nothing lost, nothing leaked', async () => {
    redis = await RedisProcess.start();
    c = new FaultCase('redis-kill', redis.url, 30);
    const env = { LOCK_MS: '2000', STALLED_MS: '1000', CONCURRENCY: '4', WORK_MS: '30' };
    for (let i = 0; i < 3; i++) await c.startWorker(env);

    const storm = c.storm.run(3000);
    await waitFor('a third of the storm', 60_000, async () => c!.storm.sent >= 1000);
    await redis.kill9();
    const downAt = Date.now();
    // Down for 2 s: past the 2 s lease once the restart's AOF replay is counted, so leases run out too.
    await waitFor('2 s of outage', 10_000, async () => Date.now() - downAt >= 2_000);
    await redis.restart();
    await storm;

    const report = await c.check(90_000);
    expect(report.events).toBeGreaterThanOrEqual(3000);
    expectClean(report);
  });
});
