import { LeaseLostError } from '../base/reconcile-scope.js';
import type { RedisClient } from './connection.js';
import { FENCE_LUA } from './fence.js';
import { queueKeys, queuePrefix, type QueueKeys } from './keys.js';
import { runScript } from './run-script.js';

/**
 * One write of handler state: a single-key Redis command (`HSET key f v`, `DEL key`, `EXPIRE key s`, …),
 * its key apart so the script can name it in KEYS (Redis Cluster routes by them).
 */
export interface StateWrite {
  command: StateCommand;
  key: string;
  args?: Array<string | number>;
}

/** The commands a handler writes its state with; each takes its key first. */
export type StateCommand = 'SET' | 'DEL' | 'EXPIRE' | 'PEXPIRE' | 'HSET' | 'HDEL' | 'HINCRBY' | 'ZADD' | 'ZREM' | 'RPUSH' | 'LTRIM' | 'SADD' | 'SREM';

/**
 * KEYS: the queue's active and leases keys, then the state keys. ARGV: the reconcile key, the claim's token,
 * and the writes as JSON `[[command, keyIndex, arg…], …]`. Carries them out only while the key's active
 * entry carries the token and its lease has not run out by Redis's clock; answers Redis's TIME (µs) when it
 * wrote, and nothing when it refused.
 *
 * Checked inside Redis, not by the caller: ioredis queues commands while it is disconnected and sends them
 * on reconnect, so a write a worker issued before a partition can arrive after a newer claim (issue 28).
 */
const FENCED_WRITE = `${FENCE_LUA}
if not holds(KEYS[1], ARGV[1], ARGV[2]) then return false end
local t = redis.call('TIME')
local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(redis.call('ZSCORE', KEYS[2], ARGV[1]))
if not lease or lease <= nowMs then return false end
for _, w in ipairs(cjson.decode(ARGV[3])) do
  local call = {w[1], KEYS[w[2]]}
  for i = 3, #w do call[#call + 1] = w[i] end
  redis.call(unpack(call))
end
return t[1] .. string.format('%06d', tonumber(t[2]))
`;

/**
 * Writes handler state on behalf of the claim with `token` on `key`, atomically: all of `writes` land, or
 * none does when the claim is no longer the key's (LeaseLostError). Resolves to Redis's TIME in µs at the
 * write, a stamp in the server's order. On Redis Cluster every state key must share the queue's hash tag
 * (functionStateKey), as the queue's own keys do.
 */
export async function fencedWrite(redis: RedisClient, keys: QueueKeys, key: string, token: string, writes: readonly StateWrite[]): Promise<{ time: string }> {
  if (writes.length === 0) return { time: '' };
  const stateKeys: string[] = [];
  const index = new Map<string, number>();
  const encoded = writes.map((w) => {
    let i = index.get(w.key);
    if (i === undefined) {
      stateKeys.push(w.key);
      i = stateKeys.length + 2;
      index.set(w.key, i);
    }
    return [w.command, i, ...(w.args ?? []).map(String)];
  });
  const answer = await runScript(redis, FENCED_WRITE, [keys.active, keys.leases, ...stateKeys], [key, token, JSON.stringify(encoded)]);
  if (typeof answer !== 'string') {
    throw new LeaseLostError(`state write for ${key} refused by Redis: claim ${token} no longer holds the key (lease lost or taken over)`);
  }
  return { time: answer };
}

/**
 * How a handler writes its state: all of a call's writes land, or none. `key` names a key in the function's
 * queue's Redis Cluster slot, which a fenced write needs (it checks the claim in the queue's own keys).
 */
export interface StateWriter {
  key(name: string): string;
  write(writes: readonly StateWrite[]): Promise<void>;
}

/** A key for function `fn`'s handler state, under its queue's hash tag. */
export function functionStateKey(prefix: string, fn: string, name: string): string {
  return `${queuePrefix(prefix, fn)}:state:${name}`;
}

/** State writes on behalf of one claim, refused inside Redis once the claim no longer holds its key. */
export function fencedStateWriter(redis: RedisClient, prefix: string, fn: string, key: string, token: string): StateWriter {
  const keys = queueKeys(prefix, fn);
  return { key: (name) => functionStateKey(prefix, fn, name), write: async (writes) => void (await fencedWrite(redis, keys, key, token, writes)) };
}

/**
 * State writes made outside any claim (a CLI, a test's setup, a function run with no queue behind it): one
 * MULTI, all or nothing, with no fence to check.
 */
export function plainStateWriter(redis: RedisClient, prefix: string, fn: string): StateWriter {
  return {
    key: (name) => functionStateKey(prefix, fn, name),
    async write(writes) {
      if (writes.length === 0) return;
      const replies = await redis.multi(writes.map((w) => [w.command.toLowerCase(), w.key, ...(w.args ?? []).map(String)])).exec();
      const failed = replies?.find(([err]) => err !== null)?.[0];
      if (failed) throw failed;
    },
  };
}
