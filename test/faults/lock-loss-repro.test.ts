import { describe, expect, it } from 'vitest';
import { waitFor } from '../harness/sandbox.js';
import { expectClean, FaultCase } from './harness/fault-case.js';
import { stopAfterEach } from './harness/stop-after-each.js';
import { RedisProcess } from './harness/redis-process.js';

// Issue 11's reproduction: lockDuration 1 s and a 6 s handler that keeps its event loop (so BullMQ
// cannot renew the lock). Before fencing: "A start, B start, B end, B start (new event), A end", and A's
// late effect landed. Now a stale holder's commit must be fenced out.
const track = stopAfterEach();

describe('fault: lost lock (issue 11 repro)', () => {
  it('a 6 s handler on a 1 s lock: the stale holder never commits alongside the new one', async () => {
    const redis = track(await RedisProcess.start());
    const c = track(new FaultCase('repro', redis.url, 1));
    const key = c.storm.keys[0]!;
    const env = { LOCK_MS: '1000', STALLED_MS: '500', CONCURRENCY: '2', SLOW_KEY: key, SLOW_BLOCK_MS: '6000', WORK_MS: '50' };
    await c.startWorker(env);
    await c.startWorker(env);

    await c.storm.event(key);
    const a = await c.slowWorker();
    // While A is blocked its lock runs out; B takes the key over (B start), finishes (B end)...
    await waitFor('another worker to take the key over from the blocked one', 30_000, async () => (await c.starts(key)).some((s) => !s.startsWith(`${a.pid}:`)));
    // ...and a new event comes in while A still runs (B start, new event), then A ends.
    await c.storm.event(key);
    const slow = await c.slowDone();

    const report = await c.check();
    console.log(`faults: repro starts: ${JSON.stringify(await c.starts(key))}`);
    expect(slow.outcome).toBe('fenced-out');
    expect(report.fencedOut).toBeGreaterThanOrEqual(1);
    expectClean(report);
  });
});
