import { describe, expect, it } from 'vitest';
import { waitFor } from '../harness/sandbox.js';
import { expectClean, FaultCase } from './harness/fault-case.js';
import { stopAfterEach } from './harness/stop-after-each.js';
import { SentinelCluster } from './harness/sentinel.js';

// A real primary/replica pair under three real Sentinels; the primary is killed with kill -9 mid-storm,
// the Sentinels promote the replica, and the old primary comes back from its AOF as a replica. Workers and
// the storm driver reach Redis through redis+sentinel:// (queue/connection.ts) and must follow the new
// primary without dropping or doubling work. (sentinel-failover.test.ts does it with SENTINEL FAILOVER.)
const track = stopAfterEach();

describe('fault: Sentinel, primary killed', () => {
  it('3 workers, 30 keys, 3000 events, primary killed with kill -9 mid-storm: no overlap, nothing lost, nothing leaked', async () => {
    const cluster = track(await SentinelCluster.start());
    const c = track(new FaultCase('sentinel-kill', cluster.url, 30));
    const env = { LOCK_MS: '2000', STALLED_MS: '1000', CONCURRENCY: '4', WORK_MS: '30' };
    for (let i = 0; i < 3; i++) await c.startWorker(env);

    const storm = c.storm.run(3000);
    await waitFor('a third of the storm', 60_000, async () => c.storm.sent >= 1000);
    const { from, to } = await cluster.killPrimary();
    console.log(`faults: sentinel kill -9 of primary :${from}, promoted :${to} at event ${c.storm.sent}`);
    expect(to).toBe(cluster.replica.port);
    await storm;

    const report = await c.check(90_000);
    expect(report.events).toBeGreaterThanOrEqual(3000);
    expectClean(report);
  });
});
