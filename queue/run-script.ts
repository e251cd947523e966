import { createHash } from 'node:crypto';
import { throwIfLeaseLost } from '../base/reconcile-scope.js';
import type { RedisClient } from './connection.js';

const shas = new Map<string, string>();

/** The SHA1 EVALSHA names `script` by (computed once per script). */
export function scriptSha(script: string): string {
  let sha = shas.get(script);
  if (!sha) {
    sha = createHash('sha1').update(script).digest('hex');
    shas.set(script, sha);
  }
  return sha;
}

/**
 * Runs a Lua script by its SHA (EVALSHA), loading it on first use or after a Redis restart (NOSCRIPT).
 * Sending the whole script on every call (EVAL) costs a parse and a hash per job on the hot path.
 */
export async function runScript(redis: RedisClient, script: string, keys: readonly string[], args: Array<string | number | Buffer>): Promise<unknown> {
  // A reconcile that lost its claim must not write through a script on behalf of it.
  throwIfLeaseLost('Redis script');
  const sha = scriptSha(script);
  try {
    return await redis.evalsha(sha, keys.length, ...keys, ...args);
  } catch (err) {
    if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
    return redis.eval(script, keys.length, ...keys, ...args);
  }
}
