import { afterAll, describe, expect, inject, it } from 'vitest';
import { createRedis, type RedisClient } from '../../queue/connection.js';
import { WorkQueue } from '../../queue/work-queue.js';
import { KeyedWorker } from '../../queue/worker.js';
import { createLogger } from '../../base/log.js';
import { waitFor } from '../harness/sandbox.js';

// A worker claims the key of the job it fetches in the same script (MOVE_TO_ACTIVE_AND_CLAIM, and
// RELEASE_AND_FINISH for the next job). BullMQ hands that next job to the processor only after the
// previous job's completion, which includes moving a pending job earlier (retried while Redis
// reconnects); nothing renews the new claim meanwhile. When that takes longer than a lease, another
// worker may hold the key by the time the job starts: it must not run then (found in review; two
// handlers of one key ran at once, one of them with an already-expired lease).
const log = createLogger('queue-fetched-claim-test', 'error');
const LEASE_MS = 1_000;
const STALL_MS = 3 * LEASE_MS;

describe('queue: a claim made at fetch and not started within its lease', () => {
  const clients: RedisClient[] = [];
  const workers: KeyedWorker[] = [];
  afterAll(async () => {
    for (const w of workers) await w.close();
    for (const c of clients) c.disconnect();
  });

  it('is confirmed before its job runs: one key is never reconciled by two workers at once', async () => {
    const url = inject('redisUrl');
    const prefix = `t-fetched-claim-${Math.random().toString(36).slice(2, 8)}`;
    const connect = () => {
      const c = createRedis(url, { maxRetriesPerRequest: null });
      clients.push(c);
      return c;
    };
    /** Every start and end of a handler, in order: the check below reads all of them. */
    const timeline: Array<{ worker: string; key: string; at: number; what: 'start' | 'end' }> = [];
    const running = new Map<string, string[]>();
    const overlaps: string[] = [];
    const q1 = new WorkQueue({ name: 'fn', connection: connect(), prefix });
    let second: Promise<void> | undefined;
    const worker = (name: string, queue: WorkQueue) => {
      const w = new KeyedWorker({
        queue,
        connection: connect(),
        prefix,
        concurrency: 1,
        lockDurationMs: LEASE_MS,
        stalledIntervalMs: 300,
        log,
        reconcile: async ({ key, signal }) => {
          const now = running.get(key) ?? [];
          if (now.length > 0) overlaps.push(`${name} started ${key} while ${now.join(', ')} ran it`);
          running.set(key, [...now, name]);
          timeline.push({ worker: name, key, at: Date.now(), what: 'start' });
          try {
            if (key === 'ns/b') {
              // Its completion fetches (and claims) ns/c on this worker.
              await queue.add('ns/c', 0, 'event');
              return { requeueAfterMs: 60_000 };
            }
            await new Promise<void>((resolve) => {
              const t = setTimeout(resolve, 2 * LEASE_MS);
              signal.addEventListener('abort', () => {
                clearTimeout(t);
                resolve();
              });
            });
            return undefined;
          } finally {
            running.set(key, (running.get(key) ?? []).filter((n) => n !== name));
            timeline.push({ worker: name, key, at: Date.now(), what: 'end' });
          }
        },
      });
      workers.push(w);
      return w;
    };
    // The first worker's follow-up for ns/b (moving its pending requeue) is slow, as on a connection
    // that reconnects; meanwhile a second worker comes up.
    const apply = q1.apply.bind(q1);
    let stalled = false;
    q1.apply = async (key, result, reason) => {
      if (!stalled && key === 'ns/b') {
        stalled = true;
        second = Promise.resolve().then(() => void worker('W2', new WorkQueue({ name: 'fn', connection: connect(), prefix })));
        await new Promise((r) => setTimeout(r, STALL_MS));
      }
      return apply(key, result, reason);
    };
    worker('W1', q1);
    await q1.add('ns/b', 0, 'event');
    await waitFor('ns/c reconciled to its end', 30_000, async () => timeline.some((e) => e.key === 'ns/c' && e.what === 'end'));
    await second;
    // And nothing else runs ns/c for a few leases: W1's fetched job must not start it again.
    await waitFor('no handler running', 10_000, async () => [...running.values()].every((r) => r.length === 0));
    await new Promise((r) => setTimeout(r, 3 * LEASE_MS));
    expect(stalled).toBe(true);
    expect(overlaps, JSON.stringify(timeline)).toEqual([]);
  });
});
