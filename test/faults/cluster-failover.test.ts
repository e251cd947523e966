import { afterEach, describe, expect, it } from 'vitest';
import { queuePrefix } from '../../queue/keys.js';
import { waitFor } from '../harness/sandbox.js';
import { ClusterCase } from './harness/cluster-case.js';
import { expectClean } from './harness/fault-case.js';
import { RedisCluster } from './harness/redis-cluster.js';

// A real Redis Cluster (3 primaries, 3 replicas), four functions' queues, each under its own hash tag
// (queue/keys.ts), a storm on all of them through fault-worker processes, and a CLUSTER FAILOVER of a
// primary that serves queue slots mid-storm. Workers and the storm driver reach the cluster through
// redis+cluster:// (queue/connection.ts) and must follow the slots to the promoted replica (MOVED)
// without doubling or dropping work.
const QUEUES = ['reconcile-alpha', 'reconcile-bravo', 'reconcile-charlie', 'reconcile-delta'];

let cluster: RedisCluster | undefined;
let c: ClusterCase | undefined;
afterEach(async () => {
  await c?.close();
  await cluster?.stop();
  c = undefined;
  cluster = undefined;
});

describe('fault: Redis Cluster failover', () => {
  it('4 queues × 20 keys, 3 workers, 3000 events, CLUSTER FAILOVER of a queue-serving primary mid-storm: no overlap, nothing lost, nothing leaked', async () => {
    cluster = await RedisCluster.start();
    c = new ClusterCase('cluster', cluster.url, QUEUES, 20);

    // Every key of one queue in one slot: BullMQ's and Ripple's keys share the queue's hash tag.
    const layout: Record<string, number> = {};
    for (const q of c.queues) {
      const owners = new Set<number>();
      for (const key of [q.keys.pending, q.keys.active, q.keys.leases, `${q.keys.jobKeyPrefix}x#1`, q.bull.toKey('wait'), q.bull.toKey('delayed'), q.bull.toKey('meta')]) {
        expect(key.startsWith(`${queuePrefix(c.prefix, q.name)}:`)).toBe(true);
        owners.add((await cluster.primaryOf(key)).port);
      }
      expect(owners.size).toBe(1);
      layout[q.name] = [...owners][0]!;
    }
    console.log(`faults: cluster queue → primary ${JSON.stringify(layout)}`);

    const env = { LOCK_MS: '2000', STALLED_MS: '1000', CONCURRENCY: '2', WORK_MS: '30' };
    for (let i = 0; i < 3; i++) await c.startWorker(env);

    const storms = c.storms.map((s) => s.run(750));
    await waitFor('a third of the storm', 120_000, async () => c!.sent >= 1000);
    const victim = await cluster.primaryOf(`${queuePrefix(c.prefix, QUEUES[0]!)}:x`);
    const at = c.sent;
    const { from, to } = await cluster.failover(victim);
    const moved = Object.entries(layout).filter(([, port]) => port === from).map(([q]) => q);
    console.log(`faults: cluster failover of :${from} (queues ${moved.join(', ')}) to :${to} from event ${at} to ${c.sent}; enqueue retries ${c.storms.reduce((n, s) => n + s.addRetries, 0)}`);
    expect(moved).toContain(QUEUES[0]);
    // The promoted replica now serves those queues' slots.
    expect((await cluster.primaryOf(`${queuePrefix(c.prefix, QUEUES[0]!)}:x`)).port).toBe(to);
    await Promise.all(storms);

    const report = await c.check(120_000);
    expect(report.events).toBeGreaterThanOrEqual(3000);
    expect(report.accepted).toBeGreaterThan(0);
    expectClean(report);
  });
});
