/**
 * Redis scripts that give BullMQ the client-go workqueue semantics it lacks.
 *
 * Why not BullMQ alone: a custom jobId is ignored while a job with that id exists, even while it is
 * active, so an event that arrives during a reconcile would be lost; `deduplication.keepLastIfActive`
 * closes that gap but cannot let an earlier request win over a pending delayed one (requeueAfter vs a
 * new event, or a new event vs a long backoff), and has had stuck-key bugs (#4311). So BullMQ stays
 * the transport (jobs, locks, stalled-job recovery, the dashboard, Job Schedulers) and these scripts
 * keep the per-key truth, atomically, in four structures per queue:
 *
 *   pending  HASH  key -> id of the one job that will reconcile it next (waiting or delayed)
 *   pending-since HASH key -> when that id was recorded (ms, Redis clock)
 *   due      ZSET  key -> when that job is due (ms, Redis clock)      — earlier request wins
 *   active   HASH  key -> id of the job reconciling it now             — the processing set
 *   dirty    ZSET  key -> earliest due of requests that came meanwhile — the dirty set
 *   failures HASH  key -> consecutive failures, for per-key backoff
 *
 * A job whose holder is gone (crashed before adding its job, or a job that BullMQ finished) is
 * treated as absent, so no key can get stuck behind a job that does not exist. Every time comes from
 * Redis's own clock (TIME), so workers on different machines agree on "due".
 *
 * Between a script recording a new pending id and the caller's `bull.add` creating that job, the job
 * does not exist yet. Treating it as absent there would let a concurrent enqueue record a second id
 * and add a second job (two reconciles for one waiting key); treating it as live for ever would let a
 * caller whose add failed leave the key behind a job that never comes. So for PENDING_GRACE_MS after
 * it was recorded, a pending id without a job is handed out again as an `add` of that same id: BullMQ
 * ignores a second add of an existing id, so whoever adds first creates the one job, and a caller
 * retrying after a failed add creates it itself.
 */

/** How long a recorded pending id whose job does not exist yet still stands for the key's next job. */
export const PENDING_GRACE_MS = 10_000;

// Shared Lua: the job hash exists and BullMQ has not finished it.
const LIVE = `
local function live(jobKeyPrefix, id)
  if not id then return false end
  local k = jobKeyPrefix .. id
  if redis.call('EXISTS', k) == 0 then return false end
  return redis.call('HEXISTS', k, 'finishedOn') == 0
end
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;

// Shared Lua: make sure exactly one job will reconcile `key` no later than `due`.
// KEYS[1..7] as ENQUEUE's. Returns {action, jobId, delayMs, readd}: add (a job must be added; readd='1'
// when the id was recorded by another call whose job may already exist with a later delay), reschedule
// (move the pending job earlier), coalesced (a job due no later exists), deferred (the key is active;
// it will run again).
const SCHEDULE = `
local function schedule(key, due, now, jobKeyPrefix)
  local holder = redis.call('HGET', KEYS[3], key)
  if holder then
    if live(jobKeyPrefix, holder) then
      redis.call('ZADD', KEYS[4], 'LT', due, key)
      return {'deferred', '', '0', '0'}
    end
    redis.call('HDEL', KEYS[3], key)
  end
  local pending = redis.call('HGET', KEYS[1], key)
  if pending then
    local job = jobKeyPrefix .. pending
    if redis.call('EXISTS', job) == 1 then
      if redis.call('HEXISTS', job, 'finishedOn') == 0 then
        local at = tonumber(redis.call('ZSCORE', KEYS[2], key))
        if at and at <= due then return {'coalesced', pending, '0', '0'} end
        redis.call('ZADD', KEYS[2], due, key)
        return {'reschedule', pending, tostring(math.max(0, due - now)), '0'}
      end
    else
      local since = tonumber(redis.call('HGET', KEYS[7], key))
      if since and now - since < ${PENDING_GRACE_MS} then
        local at = tonumber(redis.call('ZSCORE', KEYS[2], key))
        if not at or due < at then
          redis.call('ZADD', KEYS[2], due, key)
          at = due
        end
        return {'add', pending, tostring(math.max(0, at - now)), '1'}
      end
    end
  end
  local id = key .. '#' .. redis.call('INCR', KEYS[6])
  redis.call('HSET', KEYS[1], key, id)
  redis.call('HSET', KEYS[7], key, now)
  redis.call('ZADD', KEYS[2], due, key)
  return {'add', id, tostring(math.max(0, due - now)), '0'}
end
`;

/** KEYS: pending, due, active, dirty, failures, seq, pendingSince. ARGV: key, delayMs, jobKeyPrefix. */
export const ENQUEUE = `${LIVE}${SCHEDULE}
local now = nowMs()
return schedule(ARGV[1], now + tonumber(ARGV[2]), now, ARGV[3])
`;

/**
 * KEYS: pending, due, active, dirty, pendingSince. ARGV: key, jobId, jobKeyPrefix.
 * Returns 1 when this job may reconcile the key, 0 when another live job holds it (then the key is
 * marked dirty, so the holder runs once more after it finishes, and this job ends without running).
 */
export const CLAIM = `${LIVE}
local key, id = ARGV[1], ARGV[2]
local holder = redis.call('HGET', KEYS[3], key)
if redis.call('HGET', KEYS[1], key) == id then
  redis.call('HDEL', KEYS[1], key)
  redis.call('HDEL', KEYS[5], key)
  redis.call('ZREM', KEYS[2], key)
end
if holder and holder ~= id and live(ARGV[3], holder) then
  redis.call('ZADD', KEYS[4], 'LT', nowMs(), key)
  return 0
end
redis.call('HSET', KEYS[3], key, id)
return 1
`;

/**
 * KEYS: pending, due, active, dirty, failures, seq, pendingSince.
 * ARGV: key, jobId, outcome (success|terminal|error|requeue), requeueAfterMs, backoffMs, jobKeyPrefix.
 * backoffMs is the delay for this failure, computed by the worker from queue/backoff.ts: the policy
 * lives in one place, and the script only records the count and schedules the retry.
 * Releases the key and schedules what must follow: a request that came in meanwhile (dirty), a
 * backoff retry, or a requeueAfter — whichever is due first. Returns schedule()'s four fields (or
 * {'none', '', '0', '0'}) followed by the failure count and the backoff in ms, for metrics and logs.
 */
export const RELEASE = `${LIVE}${SCHEDULE}
local key, id, outcome = ARGV[1], ARGV[2], ARGV[3]
local now = nowMs()
if redis.call('HGET', KEYS[3], key) == id then redis.call('HDEL', KEYS[3], key) end
local due = nil
local dirty = redis.call('ZSCORE', KEYS[4], key)
if dirty then
  redis.call('ZREM', KEYS[4], key)
  due = math.max(tonumber(dirty), now)
end
local failures, backoff = 0, 0
if outcome == 'error' then
  failures = redis.call('HINCRBY', KEYS[5], key, 1)
  backoff = tonumber(ARGV[5])
  due = math.min(due or math.huge, now + backoff)
else
  redis.call('HDEL', KEYS[5], key)
  if outcome == 'requeue' then
    due = math.min(due or math.huge, now + tonumber(ARGV[4]))
  end
end
local r
if due then r = schedule(key, due, now, ARGV[6]) else r = {'none', '', '0', '0'} end
table.insert(r, tostring(failures))
table.insert(r, tostring(backoff))
return r
`;
