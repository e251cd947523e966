import { describe, expect, it } from 'vitest';
import { TcpProxy } from '../harness/tcp-proxy.js';
import { openSandbox, waitFor } from '../harness/sandbox.js';
import { expectClean, FaultCase, stateWriteUnderTest } from './harness/fault-case.js';
import { stopAfterEach } from './harness/stop-after-each.js';
import { RedisProcess } from './harness/redis-process.js';

// A network partition between one worker and Redis, in the middle of an autoscaler-like cycle: the worker
// reaches Redis through a TCP proxy that cuts every connection and refuses new ones. The cycle has read; cut
// off, it runs to its end and writes its decisions (a handler state write) 0.3 s into the cut, before it can
// know its lease is lost: ioredis keeps the write and sends it when it reconnects. The other workers take the
// key over; a newer cycle reads and writes its own decisions; only then does the partition heal. The old
// cycle's write must not land over the newer one's (fenced in Redis), and its late commit must be refused.
const track = stopAfterEach();

describe('fault: worker cut from Redis by a TCP proxy mid-cycle, healed after a newer cycle', () => {
  it('one of 3 workers partitioned (lease 1 s) until a newer cycle wrote: its queued decisions do not land; nothing overlaps, is lost or leaks', async () => {
    const sandbox = await openSandbox('faults-proxy');
    track({ stop: () => sandbox.cleanup() });
    const redis = track(await RedisProcess.start());
    const proxy = track(new TcpProxy({ host: '127.0.0.1', port: redis.port }));
    await proxy.start();
    const c = track(new FaultCase('proxy', redis.url, 30));
    const slowKey = c.storm.keys[0]!;
    const effects = await c.withEffects({ api: { kc: sandbox.kc, namespace: sandbox.namespace }, state: true, stateWrite: stateWriteUnderTest() });
    const env = { ...effects, LOCK_MS: '1000', STALLED_MS: '500', CONCURRENCY: '4', WORK_MS: '20', SLOW_KEY: slowKey, SLOW_ASYNC_MS: '300' };
    // The partitioned worker starts alone so the slow reconcile is surely its own.
    const victim = await c.startWorker({ ...env, QUEUE_URL: `redis://127.0.0.1:${proxy.port}` });
    await c.storm.event(slowKey);
    expect((await c.slowWorker(60_000, 10)).pid).toBe(victim.pid);
    // Cut while the slow cycle runs (it writes 0.3 s after its start), then bring up the others, who take the key over.
    proxy.cut();
    const slowToken = BigInt((await c.world.get(`${c.prefix}:slow-token`)) ?? '0');
    let storm: Promise<void>;
    try {
      await c.startWorkers(2, env);
      storm = c.storm.run(1000);
      await c.storm.event(slowKey);
      // A newer cycle has written its decisions: the key's state carries a newer token.
      const newer = await waitFor('a newer cycle to write the key’s state', 30_000, async () => {
        const state = await c.stateOf(slowKey);
        return state && BigInt(state.token) > slowToken ? state.token : undefined;
      });
      console.log(`faults: proxy newer cycle ${newer} wrote while ${slowToken} was cut off`);
    } finally {
      proxy.resume();
    }
    await storm;
    const slow = await c.slowDone(60_000);

    const report = await c.check(90_000);
    console.log(`faults: proxy slow reconcile ${JSON.stringify(slow)}`);
    expect(slow.outcome).not.toBe('accepted');
    expect(slow.effects.find((e) => e.kind === 'state')?.outcome).not.toBe('landed');
    expect(report.events).toBeGreaterThanOrEqual(1000);
    expectClean(report);
  });
});
