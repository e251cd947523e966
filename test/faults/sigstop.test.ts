import { describe, expect, it } from 'vitest';
import { openSandbox } from '../harness/sandbox.js';
import { expectClean, FaultCase, stateWriteUnderTest } from './harness/fault-case.js';
import { stopAfterEach } from './harness/stop-after-each.js';
import { RedisProcess } from './harness/redis-process.js';

// Lock loss by a frozen process (SIGSTOP, as a cgroup freeze or a paused VM does), with effects. The slow
// reconcile reads its ConfigMap and stamps its start, then plans on the CPU; the case freezes it mid-plan for
// longer than its lease. Another worker takes the key over and reads the same ConfigMap; while that new holder
// is still planning (it waits for the case's go), the frozen one is resumed and goes straight into its writes,
// with nothing awaited in between: the API PUT with the resourceVersion it read, and the handler state write.
// Both must be refused (LeaseLostError before sending, a 409, or fenced out in Redis): had either landed, the
// new holder would be planning from a world the old one changed under it.
//
// Why a CPU-bound plan and not an await: a process frozen while it waits on I/O gets EINTR from epoll_wait on
// SIGCONT, and libuv then runs its overdue timers (the lease's expiry among them) before any I/O callback —
// measured on Node 20 with a BLPOP answered during the freeze: the 2 s timer fired first every time. A process
// frozen mid-computation resumes that computation and sends whatever follows before any timer runs.
const track = stopAfterEach();

describe('fault: worker SIGSTOPped past its lease, resumed straight into its writes', () => {
  it('3 workers, 30 keys, 1000 events: the frozen holder writes nothing stale; nothing overlaps, is lost or leaks', async () => {
    const sandbox = await openSandbox('faults-sigstop');
    track({ stop: () => sandbox.cleanup() });
    const redis = track(await RedisProcess.start());
    const c = track(new FaultCase('sigstop', redis.url, 30));
    const slowKey = c.storm.keys[0]!;
    const effects = await c.withEffects({ api: { kc: sandbox.kc, namespace: sandbox.namespace }, state: true, stateWrite: stateWriteUnderTest() });
    const env = { ...effects, LOCK_MS: '1000', STALLED_MS: '500', CONCURRENCY: '4', WORK_MS: '20', SLOW_KEY: slowKey, SLOW_SPIN_MS: '15000', TAKEOVER_WAIT: '1' };
    await c.startWorkers(3, env);

    const storm = c.storm.run(1000);
    await c.storm.event(slowKey);
    const victim = await c.slowWorker(60_000, 10);
    victim.kill('SIGSTOP');
    let taker: string;
    try {
      // An event for the key while it is held: its job waits for the lease to run out, then another worker claims it.
      await c.storm.event(slowKey);
      taker = await c.takeoverWaiting({ beforeStaleSend: true });
    } finally {
      victim.kill('SIGCONT');
    }
    const slow = await c.slowDone();
    await c.takeoverGo();
    await storm;

    const report = await c.check(90_000);
    console.log(`faults: sigstop slow reconcile ${JSON.stringify(slow)}; taken over by ${taker}`);
    // The freeze came mid-plan and lasted past the lease (else this case showed nothing).
    expect(slow.pausedMs).toBeGreaterThan(1000);
    expect(slow.effects.map((e) => [e.kind, e.outcome])).toEqual([
      ['state', 'refused'],
      ['api', 'refused'],
    ]);
    expect(report.events).toBeGreaterThanOrEqual(1000);
    expect(report.effects).toBeGreaterThan(0);
    expectClean(report);
  });
});
