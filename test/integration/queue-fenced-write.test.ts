import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { fencedWrite } from '../../queue/fenced-write.js';
import { queuePrefix } from '../../queue/keys.js';
import { runScript } from '../../queue/run-script.js';
import { CLAIM } from '../../queue/scripts.js';
import { parseClaim } from '../../queue/worker.js';
import { WorkQueue } from '../../queue/work-queue.js';
import { LeaseLostError } from '../../base/reconcile-scope.js';

// Issue 28, item 3: handler state written through Ripple's helper is checked against the claim's token and
// lease inside Redis. Real Redis and the real CLAIM script; the claims are made directly so a test controls
// which token is stale.
let redis: Redis;
let queue: WorkQueue;
let state: string;

beforeAll(() => {
  redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: null });
  const prefix = `fw-${Math.random().toString(36).slice(2, 8)}`;
  queue = new WorkQueue({ name: 'fn', connection: redis, prefix });
  // Under the queue's hash tag, as a state key must be on Redis Cluster.
  state = `${queuePrefix(prefix, 'fn')}:state`;
});
afterAll(async () => {
  await queue.close();
  redis.disconnect();
});

async function claim(key: string, leaseMs: number): Promise<string> {
  const verdict = parseClaim(await runScript(redis, CLAIM, queue.scriptKeys, [key, `${key}#${Date.now()}`, queue.keys.jobKeyPrefix, String(leaseMs)]));
  if (verdict.verdict !== 'claimed') throw new Error(`expected a claim, got ${JSON.stringify(verdict)}`);
  return verdict.token;
}

describe('fencedWrite', () => {
  it('writes atomically for the holder, stamped with Redis time, and refuses a token the key has moved on from', async () => {
    const first = await claim('ns/a', 300);
    const landed = await fencedWrite(redis, queue.keys, 'ns/a', first, [
      { command: 'HSET', key: state, args: ['ns/a', 'first'] },
      { command: 'EXPIRE', key: state, args: [600] },
    ]);
    expect(landed.time).toMatch(/^\d{16}$/);
    expect(await redis.hget(state, 'ns/a')).toBe('first');
    expect(await redis.ttl(state)).toBeGreaterThan(500);

    // The lease ran out in Redis: nobody has claimed since, but the write is refused all the same.
    await new Promise((r) => setTimeout(r, 400));
    await expect(fencedWrite(redis, queue.keys, 'ns/a', first, [{ command: 'HSET', key: state, args: ['ns/a', 'late'] }])).rejects.toBeInstanceOf(LeaseLostError);

    const second = await claim('ns/a', 10_000);
    await expect(fencedWrite(redis, queue.keys, 'ns/a', first, [{ command: 'HSET', key: state, args: ['ns/a', 'stale'] }])).rejects.toThrow(/no longer holds the key/);
    await fencedWrite(redis, queue.keys, 'ns/a', second, [{ command: 'HSET', key: state, args: ['ns/a', 'second'] }]);
    expect(await redis.hget(state, 'ns/a')).toBe('second');
  });

  it('is all or nothing: a refused write changes none of its keys', async () => {
    const other = `${state}:other`;
    await expect(
      fencedWrite(redis, queue.keys, 'ns/never-claimed', '1', [
        { command: 'SET', key: other, args: ['x'] },
        { command: 'HSET', key: state, args: ['ns/never-claimed', 'x'] },
      ]),
    ).rejects.toBeInstanceOf(LeaseLostError);
    expect(await redis.exists(other)).toBe(0);
    expect(await redis.hexists(state, 'ns/never-claimed')).toBe(0);
  });
});
