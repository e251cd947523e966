/**
 * Which resourceVersion a queued key keeps when several watch events of its object enqueue it before it is
 * claimed (queue/scripts.ts ENQUEUE folds them; the claim hands the kept one to the handler as
 * ReconcileRequest.minResourceVersion). The highest wins, so a job folded from events at 5, 12 and 9 is
 * woken at 12 whatever order they arrived in.
 *
 * Versions are etcd revisions written in decimal. They are compared as strings, never as numbers: Lua's
 * numbers are doubles and lose integers past 2^53, and a revision is a 64-bit integer. A longer decimal
 * string is the larger number, then equal lengths compare character by character (kube/resource-version.ts
 * orders the same way with BigInt). A version that is not a decimal integer in canonical form (etcd writes no
 * leading zeros; '009' would sort above '10' here but below it as a number) cannot be ordered: the one that
 * arrived last is kept, as the newest event is the best guess of what the handler must not plan below. An
 * empty version is no version and changes nothing.
 *
 * keepVersion (TypeScript) and KEEP_VERSION_LUA (the scripts) are the same rule, and the integration test
 * test/integration/queue-woken-version.test.ts checks the Lua against this function case by case.
 */
const DECIMAL = /^(0|[1-9]\d*)$/;

/** The version a key keeps when `incoming` arrives while it holds `current` (undefined: none yet). */
export function keepVersion(current: string | undefined, incoming: string): string | undefined {
  if (incoming === '') return current;
  if (current === undefined) return incoming;
  if (!DECIMAL.test(current) || !DECIMAL.test(incoming)) return incoming;
  if (current.length !== incoming.length) return current.length > incoming.length ? current : incoming;
  return current >= incoming ? current : incoming;
}

/**
 * The field, in the versions hash, under which a claim keeps the version it took (then the key's own name). No
 * queue key starts with '#' (object names cannot), so it never names a key.
 */
export const CLAIMED_VERSION_PREFIX = '#claimed:';

/**
 * Lua: `keepVersion(key, v)` records `v` for `key` in the versions hash (KEYS[10], queue/keys.ts) unless the
 * one recorded is a decimal integer at least as high; an empty or absent `v` changes nothing.
 */
export const KEEP_VERSION_LUA = `
local CLAIMED = '${CLAIMED_VERSION_PREFIX}'
local function isDecimal(v) return v == '0' or string.find(v, '^[1-9]%d*$') ~= nil end
local function keepVersion(key, v)
  if not v or v == '' then return end
  local cur = redis.call('HGET', KEYS[10], key)
  if cur and isDecimal(cur) and isDecimal(v) and (#cur > #v or (#cur == #v and cur >= v)) then return end
  redis.call('HSET', KEYS[10], key, v)
end
-- A claim keeps the version it took under CLAIMED .. key until it is released; a claim that ends without doing
-- its work (failed, requeued, lease lost) gives it back to the key here.
local function returnClaimedVersion(key)
  local v = redis.call('HGET', KEYS[10], CLAIMED .. key)
  if not v then return end
  redis.call('HDEL', KEYS[10], CLAIMED .. key)
  keepVersion(key, v)
end
`;
