/**
 * Fencing: every claim of a key gets a token, increasing per queue (INCR of the queue's `seq`), stored
 * with the key's active entry as `<token>|<jobId>`. Whatever a holder does after it lost the key —
 * RELEASE, the follow-up it schedules, state writes through Ripple's helpers — is checked against the
 * token in that entry and is a no-op when another claim replaced it.
 */

/** The active entry for a claim. */
export function activeEntry(token: string, jobId: string): string {
  return `${token}|${jobId}`;
}

/** `{ token, jobId }` of an active entry, or undefined for a value that is not one. */
export function parseActiveEntry(value: string | null | undefined): { token: string; jobId: string } | undefined {
  if (!value) return undefined;
  const bar = value.indexOf('|');
  if (bar <= 0) return undefined;
  return { token: value.slice(0, bar), jobId: value.slice(bar + 1) };
}

/**
 * Lua: `holds(activeKey, key, token)` is true while the key's active entry carries `token`. A script
 * that writes state on behalf of a reconcile includes this and writes only when it holds: a stale
 * holder (its lease lost, the key claimed again) then changes nothing.
 */
export const FENCE_LUA = `
local function holds(activeKey, key, token)
  local v = redis.call('HGET', activeKey, key)
  if not v then return false end
  local bar = string.find(v, '|', 1, true)
  return bar ~= nil and string.sub(v, 1, bar - 1) == token
end
`;
