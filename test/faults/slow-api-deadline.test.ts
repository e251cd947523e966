import path from 'node:path';
import { describe, expect, it, inject } from 'vitest';
import { openSandbox } from '../harness/sandbox.js';
import { DelayProxy } from './harness/delay-proxy.js';
import { expectClean, FaultCase, stateWriteUnderTest } from './harness/fault-case.js';
import { stopAfterEach } from './harness/stop-after-each.js';
import { RedisProcess } from './harness/redis-process.js';

// A reconcile whose deadline passes while the API server is slow to apply its write. One worker reaches the
// API server through a proxy that holds its next request 1.5 s and then delivers it even though the client
// gave up: the server has the write and applies it late, as a slow etcd or an overloaded API server would (an
// abort on the client side does not cancel it). The slow reconcile (lease 2 s, deadline 1 s) reads its
// ConfigMap, sends its PUT at ~0.3 s, and is aborted at its deadline. The key's next holder reads, and waits,
// planning, until the late write has been applied. That write must have landed before the new holder read
// (the key stays held until the stale holder's lease has run out) or have been refused.
const track = stopAfterEach();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('fault: reconcile deadline while the API server is slow to apply a write', () => {
  it('the late PUT lands before the next holder reads, or not at all; nothing overlaps, is lost or leaks', async () => {
    const sandbox = await openSandbox('faults-slowapi');
    track({ stop: () => sandbox.cleanup() });
    const redis = track(await RedisProcess.start());
    const proxy = track(DelayProxy.forServer(inject('kubeconfig')));
    await proxy.start();
    const c = track(new FaultCase('slowapi', redis.url, 10));
    const slowKey = c.storm.keys[0]!;
    const effects = await c.withEffects({ api: { kc: sandbox.kc, namespace: sandbox.namespace }, state: true, stateWrite: stateWriteUnderTest() });
    const env = { ...effects, LOCK_MS: '2000', STALLED_MS: '1000', TIMEOUT_MS: '1000', CONCURRENCY: '2', WORK_MS: '20', SLOW_KEY: slowKey, SLOW_ASYNC_MS: '300', TAKEOVER_WAIT: '1' };
    const slowConfig = path.join(c.historyDir, 'kubeconfig-through-proxy');
    proxy.writeKubeConfig(inject('kubeconfig'), slowConfig);
    // The slow worker starts alone, so the slow reconcile is surely its own; one at a time, so the held request is its PUT.
    const victim = await c.startWorker({ ...env, KUBECONFIG_PATH: slowConfig, CONCURRENCY: '1' });
    await c.storm.event(slowKey);
    expect((await c.slowWorker(60_000, 10)).pid).toBe(victim.pid);
    // Its read is done; the next request it sends is the PUT.
    proxy.holdNext(1500);
    await c.startWorkers(2, env);
    const storm = c.storm.run(600);
    await c.storm.event(slowKey);
    const taker = await c.takeoverWaiting();
    await Promise.race([proxy.delivered, sleep(30_000).then(() => Promise.reject(new Error('the held PUT was not answered within 30 s')))]);
    const slow = await c.slowDone();
    await c.takeoverGo();
    await storm;

    const report = await c.check(90_000);
    console.log(`faults: slow-api slow reconcile ${JSON.stringify(slow)}; taken over by ${taker}; held PUT delivered at +${proxy.deliveredAt - Number((await c.starts(slowKey))[0]?.split(':')[2] ?? 0)} ms from the slow start`);
    // The deadline passed while its PUT was held: it never learnt the PUT's fate.
    expect(slow.effects.find((e) => e.kind === 'api')?.outcome).not.toBe('landed');
    expect(report.events).toBeGreaterThanOrEqual(600);
    expectClean(report);
  });
});
