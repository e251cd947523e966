import { describe, expect, it } from 'vitest';
import { openSandbox } from '../harness/sandbox.js';
import { expectClean, FaultCase, stateWriteUnderTest } from './harness/fault-case.js';
import { stopAfterEach } from './harness/stop-after-each.js';
import { RedisProcess } from './harness/redis-process.js';

// A handler that blocks its event loop in the middle of its work (a synchronous, CPU-bound plan; here
// Atomics.wait: no timer, no I/O, no lock renewal) for 5 s, past its 1 s lease, and
// then goes straight into its writes: the API PUT with the resourceVersion it read and the handler state
// write, sent in the same turn of the event loop, before Node runs the overdue timers that would abort it.
// Meanwhile another worker took the key over and read; it waits, still planning, until the case lets it go.
// The blocked handler's writes must be refused; none may land after the new holder read.
const track = stopAfterEach();

describe('fault: handler blocks its event loop past its lease, then writes at once', () => {
  it('3 workers, 30 keys, 1000 events: the late handler writes nothing stale; nothing overlaps, is lost or leaks', async () => {
    const sandbox = await openSandbox('faults-blocked');
    track({ stop: () => sandbox.cleanup() });
    const redis = track(await RedisProcess.start());
    const c = track(new FaultCase('blocked', redis.url, 30));
    const slowKey = c.storm.keys[0]!;
    const effects = await c.withEffects({ api: { kc: sandbox.kc, namespace: sandbox.namespace }, state: true, stateWrite: stateWriteUnderTest() });
    const env = {
      ...effects,
      LOCK_MS: '1000',
      STALLED_MS: '500',
      CONCURRENCY: '4',
      WORK_MS: '20',
      SLOW_KEY: slowKey,
      SLOW_BLOCK_MS: '5000',
      TAKEOVER_WAIT: '1',
    };
    await c.startWorkers(3, env);

    const storm = c.storm.run(1000);
    await c.storm.event(slowKey);
    await c.slowWorker();
    // An event while the key is held: its job waits for the lease to run out, then another worker claims it.
    await c.storm.event(slowKey);
    const taker = await c.takeoverWaiting({ beforeStaleSend: true });
    const slow = await c.slowDone();
    await c.takeoverGo();
    await storm;

    const report = await c.check(90_000);
    console.log(`faults: blocked slow reconcile ${JSON.stringify(slow)}; taken over by ${taker}`);
    expect(slow.effects.map((e) => [e.kind, e.outcome])).toEqual([
      ['state', 'refused'],
      ['api', 'refused'],
    ]);
    expect(report.events).toBeGreaterThanOrEqual(1000);
    expect(report.effects).toBeGreaterThan(0);
    expectClean(report);
  });
});
