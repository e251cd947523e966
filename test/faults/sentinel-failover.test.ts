import { describe, expect, it } from 'vitest';
import { waitFor } from '../harness/sandbox.js';
import { expectClean, FaultCase } from './harness/fault-case.js';
import { stopAfterEach } from './harness/stop-after-each.js';
import { SentinelCluster } from './harness/sentinel.js';

// A real primary/replica pair under three real Sentinels, failed over mid-storm. Workers and the storm
// driver reach Redis through redis+sentinel:// (queue/connection.ts): the old primary answers READONLY
// once demoted and the clients must follow the new one without dropping or doubling work.
const track = stopAfterEach();

describe('fault: Sentinel failover', () => {
  it('3 workers, 30 keys, 3000 events, SENTINEL FAILOVER mid-storm: no overlap, nothing lost, nothing leaked', async () => {
    const cluster = track(await SentinelCluster.start());
    const c = track(new FaultCase('sentinel', cluster.url, 30));
    const env = { LOCK_MS: '2000', STALLED_MS: '1000', CONCURRENCY: '4', WORK_MS: '30' };
    for (let i = 0; i < 3; i++) await c.startWorker(env);

    const storm = c.storm.run(3000);
    await waitFor('a third of the storm', 60_000, async () => c.storm.sent >= 1000);
    const { from, to } = await cluster.failover();
    console.log(`faults: sentinel failover from :${from} to :${to} at event ${c.storm.sent}`);
    expect(to).toBe(cluster.replica.port);
    await storm;

    const report = await c.check(90_000);
    expect(report.events).toBeGreaterThanOrEqual(3000);
    expectClean(report);
  });
});
