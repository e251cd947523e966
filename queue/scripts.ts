import { ADD_KEYS_LUA, BULL_ADD_LUA, BULL_FINISH_LUA, BULL_MOVE_TO_ACTIVE_LUA, FINISH_ADD_KEYS_LUA } from './bull-scripts.js';
import { FENCE_LUA } from './fence.js';
import { KEEP_VERSION_LUA } from './resource-version-order.js';

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
 *   active   HASH  key -> `<token>|<jobId>` of the claim reconciling it now — the processing set
 *   leases   ZSET  key -> when that claim's lease ends (ms, Redis clock); its worker renews it
 *   dirty    ZSET  key -> earliest due of requests that came meanwhile — the dirty set
 *   failures HASH  key -> consecutive failures, for per-key backoff
 *   seq      STRING     job ids and fencing tokens come from INCR of it (a claim raises it to at
 *                       least Redis's clock in µs-like units, see CLAIM)
 *   released HASH  key -> `<token>|<answer…>` of the key's last RELEASE, until the key's next RELEASE or the
 *                       next sweep; a claim leaves it, as its token (never given twice) cannot match it
 *   versions HASH  key -> the highest resourceVersion of the key's own object among the watch events that
 *                       enqueued it since its last claim (queue/resource-version-order.ts); the claim takes it
 *
 * A claim is fenced (queue/fence.ts): CLAIM refuses a key whose holder's lease is alive, whatever the
 * job id, and gives each claim a new token; RELEASE and RENEW do nothing for a token that is no longer
 * the key's, so a worker that lost its lease (paused, cut off, past its deadline) cannot release the
 * key under its successor or schedule follow-ups for it. A holder whose lease ran out is gone: the next
 * ENQUEUE or CLAIM takes the key over.
 *
 * A pending job that does not exist (its adder crashed, or BullMQ finished it) is treated as absent,
 * so no key can get stuck behind a job that does not exist. Every time comes from
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

// Shared Lua: the job hash exists and BullMQ has not finished it; Redis's clock.
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

// Shared Lua: is the key held by a claim whose lease is alive? A holder whose lease ran out is removed
// here, and the requests it left marked dirty are returned (their earliest due) so they still run.
const HELD = `
local function held(key, now)
  if not redis.call('HGET', KEYS[3], key) then return false, nil end
  local lease = tonumber(redis.call('ZSCORE', KEYS[8], key))
  if lease and lease > now then return true, lease end
  redis.call('HDEL', KEYS[3], key)
  redis.call('ZREM', KEYS[8], key)
  -- The dead holder never finished: the version it was woken at goes to whoever runs the key next.
  returnClaimedVersion(key)
  return false, nil
end
`;

// Shared Lua: make sure exactly one job will reconcile \`key\` no later than \`due\`.
// KEYS as ALL_KEYS. Returns {action, jobId, delayMs, readd}: add (a job must be added; readd='1'
// when the id was recorded by another call whose job may already exist with a later delay), reschedule
// (move the pending job earlier), coalesced (a job due no later exists), deferred (the key is held;
// it will run again after).
const SCHEDULE = `
local function schedule(key, due, now, jobKeyPrefix)
  local isHeld = held(key, now)
  if isHeld then
    redis.call('ZADD', KEYS[4], 'LT', due, key)
    return {'deferred', '', '0', '0'}
  end
  local left = tonumber(redis.call('ZSCORE', KEYS[4], key))
  if left then
    redis.call('ZREM', KEYS[4], key)
    if left < due then due = math.max(left, now) end
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
  local id = key .. '#' .. string.format('%.0f', redis.call('INCR', KEYS[6]))
  redis.call('HSET', KEYS[1], key, id)
  redis.call('HSET', KEYS[7], key, now)
  redis.call('ZADD', KEYS[2], due, key)
  return {'add', id, tostring(math.max(0, due - now)), '0'}
end
`;


/**
 * KEYS: scriptKeys() then BullMQ's bullAddKeys(). ARGV: key, delayMs, jobKeyPrefix, the resourceVersion of the
 * key's own object whose watch event asks for this ('' or absent: none), then bullAddArgs()'s packed args,
 * data and packed opts. The version is folded into the key's (keepVersion: the highest is kept) whatever
 * schedule() decides — a pending job, a held key's follow-up or a new job all carry it to their claim.
 * schedule(), and when it decides on a new job, BullMQ's add of it in the same script
 * (queue/bull-scripts.ts): one round trip, and the recorded id always has its job. Returns schedule()'s four
 * fields, with action `added` when the job was added here (parseSchedule reads it as `add` with `added`).
 */
export const ENQUEUE = `${LIVE}${KEEP_VERSION_LUA}${HELD}${SCHEDULE}${BULL_ADD_LUA}
local now = nowMs()
keepVersion(ARGV[1], ARGV[4])
local r = schedule(ARGV[1], now + tonumber(ARGV[2]), now, ARGV[3])
-- Without BullMQ's arguments the caller adds the job itself (the two-step form, kept for tests that stop
-- between the decision and the add).
if r[1] ~= 'add' or not ARGV[5] then return r end
-- An add of an id recorded by another call whose job does not exist yet (readd) creates it here with the
-- key's due; should that call's own add land later, BullMQ ignores it (the id exists), so nothing is left
-- to move afterwards.
bullAdd(${ADD_KEYS_LUA}, r[2], tonumber(r[3]), now, ARGV[5], ARGV[6], ARGV[7])
return {'added', r[2], r[3], r[4]}
`;

// Shared Lua: claim(key, id, jobKeyPrefix, leaseMs, now), CLAIM's decision (see CLAIM) as a function, so the
// scripts that hand a worker its next job can claim it in the same round trip (claimFetched).
const CLAIM_FN = `
local function claim(key, id, jobKeyPrefix, leaseMs, now)
local isPending = redis.call('HGET', KEYS[1], key) == id
local isHeld, lease = held(key, now)
if isHeld then
  redis.call('ZADD', KEYS[4], 'LT', now, key)
  if not isPending then
    local p = redis.call('HGET', KEYS[1], key)
    if p and live(jobKeyPrefix, p) then
      local at = tonumber(redis.call('ZSCORE', KEYS[2], key))
      if at and at <= lease then return {'skip', '', '0', ''} end
      redis.call('ZADD', KEYS[2], lease, key)
      return {'reschedule', p, tostring(lease - now), ''}
    end
    redis.call('HSET', KEYS[1], key, id)
    redis.call('HSET', KEYS[7], key, now)
  end
  redis.call('ZADD', KEYS[2], lease, key)
  return {'held', id, tostring(lease - now), ''}
end
if isPending then
  redis.call('HDEL', KEYS[1], key)
  redis.call('HDEL', KEYS[7], key)
  redis.call('ZREM', KEYS[2], key)
else
  -- A second job for a key that already has a pending one (an enqueuer that stalled past the pending
  -- grace added its old id late): the pending job runs later and reads fresh state, so it covers this
  -- job's request; it is only brought forward, and this job ends.
  local p = redis.call('HGET', KEYS[1], key)
  if p and live(jobKeyPrefix, p) then
    local at = tonumber(redis.call('ZSCORE', KEYS[2], key))
    if at and at <= now then return {'skip', '', '0', ''} end
    redis.call('ZADD', KEYS[2], now, key)
    return {'reschedule', p, '0', ''}
  end
end
local dirty = tonumber(redis.call('ZSCORE', KEYS[4], key))
if dirty and dirty <= now then redis.call('ZREM', KEYS[4], key) end
-- Tokens never go back, even across a failover: replication is asynchronous, so a promoted replica may
-- not have the last INCRs of the old primary. Each token is at least now(ms) × 1000, so a new primary
-- (whose clock is past the old one's last claim by the time a failover completes) starts above every
-- token the old one gave out.
local n = redis.call('INCR', KEYS[6])
local floor = now * 1000
if n < floor then
  n = floor
  redis.call('SET', KEYS[6], string.format('%.0f', n))
end
local token = string.format('%.0f', n)
redis.call('HSET', KEYS[3], key, token .. '|' .. id)
redis.call('ZADD', KEYS[8], now + tonumber(leaseMs), key)
-- The version the key was woken at goes to this run; events that come while it runs record the next run's.
local woken = redis.call('HGET', KEYS[10], key)
if woken then
  redis.call('HDEL', KEYS[10], key)
  -- Kept with the claim until it is released well: a claim that ends any other way gives it back.
  redis.call('HSET', KEYS[10], CLAIMED .. key, woken)
else
  redis.call('HDEL', KEYS[10], CLAIMED .. key)
end
return {'claimed', token, '0', woken or ''}
end

-- A job BullMQ just moved to active (fetched is its moveToActive/moveToFinished answer: the job's
-- HGETALL, its id, …) is claimed here when it is a reconcile job whose data the worker will accept
-- (reconcileJobSchema: a non-empty string key, a string reason or none); anything else is left to the
-- worker's own CLAIM. Returns claim()'s verdict with the job id, or an empty table.
local function claimFetched(fetched, jobName, jobKeyPrefix, leaseMs, now)
  if type(fetched) ~= 'table' or type(fetched[1]) ~= 'table' or type(fetched[2]) ~= 'string' then return {} end
  local h, name, data = fetched[1], nil, nil
  for i = 1, #h, 2 do
    if h[i] == 'name' then name = h[i + 1] elseif h[i] == 'data' then data = h[i + 1] end
  end
  if name ~= jobName or type(data) ~= 'string' then return {} end
  local ok, d = pcall(cjson.decode, data)
  if not ok or type(d) ~= 'table' or type(d.key) ~= 'string' or d.key == '' then return {} end
  if d.reason ~= nil and type(d.reason) ~= 'string' then return {} end
  local v = claim(d.key, fetched[2], jobKeyPrefix, leaseMs, now)
  table.insert(v, fetched[2])
  return v
end
`;

/**
 * ARGV: key, jobId, jobKeyPrefix, leaseMs. Returns {verdict, value, delayMs, version}:
 *   claimed <token>  this job reconciles the key now, under a new fencing token and a lease of leaseMs;
 *                    `version` is the resourceVersion the key was woken at ('' when none), taken from the
 *                    versions hash so that events arriving while it runs go to the follow-up run;
 *   held <delayMs>   another claim's lease is alive: this job stands for the key's next reconcile and
 *                    the worker moves it to delayed until the lease ends (the holder, on release, moves
 *                    it earlier because the key is marked dirty); so a holder that never releases still
 *                    leaves a job behind it;
 *   reschedule <id> <delayMs>  held, and another pending job stands for the key: it is brought forward
 *                    to the lease's end, and this job ends;
 *   skip             held, and another pending job due no later stands for the key: this job ends;
 *                    also when the key is free but another pending job (due now) stands for it.
 * Requests marked dirty against a holder whose lease ran out are folded in: the claim reads fresh state.
 */
export const CLAIM = `${LIVE}${KEEP_VERSION_LUA}${HELD}${CLAIM_FN}
return claim(ARGV[1], ARGV[2], ARGV[3], ARGV[4], nowMs())
`;

/** ARGV: key, token, leaseMs. Extends the lease of the claim with this token; 0 when it is not the key's any more. */
export const RENEW = `${LIVE}${FENCE_LUA}
local now = nowMs()
if not holds(KEYS[3], ARGV[1], ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[8], now + tonumber(ARGV[3]), ARGV[1])
return 1
`;

// Shared Lua: release(key, token, outcome, requeueAfterMs, backoffMs, jobKeyPrefix, add, now) — see RELEASE. `add`:
// nil, or bullAdd's keys and bullAddArgs()'s three, {ak, packedArgs, data, packedOpts}.
// Returns the answer, and whether it is the answer of an earlier run (a resent RELEASE).
const RELEASE_FN = `
local function release(key, token, outcome, requeueAfterMs, backoffMs, jobKeyPrefix, add, now)
  if not holds(KEYS[3], key, token) then
    -- This RELEASE may have run already and only its reply was lost (the client resends unanswered
    -- commands after a reconnect): answer what it answered then, so its follow-up is still carried out.
    local done = redis.call('HGET', KEYS[9], key)
    if done and string.sub(done, 1, #token + 1) == token .. '|' then return cjson.decode(string.sub(done, #token + 2)), true end
    return {'stale', '', '0', '0', '0', '0'}, false
  end
  redis.call('HDEL', KEYS[3], key)
  redis.call('ZREM', KEYS[8], key)
  -- A run that failed or asked to come back has not done what its version asked for: the next run keeps it.
  if outcome == 'error' or outcome == 'requeue' or outcome == 'unrun' then returnClaimedVersion(key) else redis.call('HDEL', KEYS[10], CLAIMED .. key) end
  local due = nil
  local dirty = redis.call('ZSCORE', KEYS[4], key)
  if dirty then
    redis.call('ZREM', KEYS[4], key)
    due = math.max(tonumber(dirty), now)
  end
  local failures, backoff = 0, 0
  if outcome == 'error' then
    failures = redis.call('HINCRBY', KEYS[5], key, 1)
    backoff = tonumber(backoffMs)
    due = math.min(due or math.huge, now + backoff)
  elseif outcome == 'unrun' then
    -- Nothing ran (the dispatcher's function had no replica to take the call): neither a failure nor a success,
    -- so the failure count, and with it the next backoff, stays as it was.
    due = math.min(due or math.huge, now + tonumber(requeueAfterMs))
  else
    redis.call('HDEL', KEYS[5], key)
    if outcome == 'requeue' then
      due = math.min(due or math.huge, now + tonumber(requeueAfterMs))
    end
  end
  local r
  if due then r = schedule(key, due, now, jobKeyPrefix) else r = {'none', '', '0', '0'} end
  if add and r[1] == 'add' then
    bullAdd(add[1], r[2], tonumber(r[3]), now, add[2], add[3], add[4])
    r[1] = 'added'
  end
  table.insert(r, tostring(failures))
  table.insert(r, tostring(backoff))
  redis.call('HSET', KEYS[9], key, token .. '|' .. cjson.encode(r))
  return r, false
end
`;

/**
 * KEYS: scriptKeys() then BullMQ's bullAddKeys(). ARGV: key, token, outcome (success|terminal|error|requeue|unrun),
 * requeueAfterMs, backoffMs, jobKeyPrefix, optionally bullAddArgs()'s three for the follow-up job.
 * The version the claim was woken at (kept with it since CLAIM) is dropped on success or a terminal error and
 * given back to the key on an error or a requeue, so the retry or the requeued run is woken at it too.
 * `unrun` (nothing ran: the dispatcher's function had no replica to take the call) gives the version back and brings
 * the key back after requeueAfterMs like a requeue, but leaves its failure count, and so its backoff, as it was.
 * backoffMs is the delay for this failure, computed by the worker from queue/backoff.ts: the policy
 * lives in one place, and the script only records the count and schedules the retry.
 * Releases the key and schedules what must follow: a request that came in meanwhile (dirty), a
 * backoff retry, or a requeueAfter — whichever is due first; a new job for it is added here when the
 * add arguments are given (action `added`). Returns schedule()'s four fields (or {'none', '', '0', '0'})
 * followed by the failure count and the backoff in ms, for metrics and logs; {'stale', …} and nothing
 * changed when the token is no longer the key's (its lease was lost).
 */
export const RELEASE = `${LIVE}${KEEP_VERSION_LUA}${HELD}${SCHEDULE}${FENCE_LUA}${BULL_ADD_LUA}${RELEASE_FN}
local add = nil
if ARGV[7] then add = {${ADD_KEYS_LUA}, ARGV[7], ARGV[8], ARGV[9]} end
return (release(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], add, nowMs()))
`;

/**
 * Where RELEASE_AND_FINISH notes, per released key, `<token>|<id>` of the job it fetched next: a resend of the
 * same release after a lost reply hands that job over again (REFETCH). In the released hash, under a field no
 * reconcile key can have.
 */
export const NEXT_FETCHED_PREFIX = '>next:';

// Shared Lua: refetch(key, token, r, jobKeyPrefix, bullOpts): the answer a resent RELEASE_AND_FINISH gives. The job its first
// run fetched, as BullMQ's moveToFinished answers it ({its hash, its id, 0, 0}), with the claim that run made, while
// the job is unfinished and still locked with this worker's lock token (bullOpts: moveToFinished's packed opts),
// its key still held by that claim; else no next job ({0, r, {}}), and BullMQ's worker fetches again.
const REFETCH = `
local NEXT = '${NEXT_FETCHED_PREFIX}'
local function refetch(key, token, r, jobKeyPrefix, bullOpts)
  local noted = redis.call('HGET', KEYS[9], NEXT .. key)
  if not noted or string.sub(noted, 1, #token + 1) ~= token .. '|' then return {0, r, {}} end
  local id = string.sub(noted, #token + 2)
  if not live(jobKeyPrefix, id) then return {0, r, {}} end
  -- Still this worker's: BullMQ locked the fetched job with the same lock token the resend carries.
  local ok, o = pcall(cmsgpack.unpack, bullOpts)
  if not ok or type(o) ~= 'table' or redis.call('GET', jobKeyPrefix .. id .. ':lock') ~= o['token'] then return {0, r, {}} end
  local hash = redis.call('HGETALL', jobKeyPrefix .. id)
  local nextKey = nil
  for i = 1, #hash, 2 do
    if hash[i] == 'data' then
      local ok, d = pcall(cjson.decode, hash[i + 1])
      if ok and type(d) == 'table' and type(d.key) == 'string' then nextKey = d.key end
    end
  end
  local claim = {}
  if nextKey then
    local entry = redis.call('HGET', KEYS[3], nextKey)
    local bar = entry and string.find(entry, '|', 1, true)
    if bar and string.sub(entry, bar + 1) == id then
      claim = {'claimed', string.sub(entry, 1, bar - 1), '0', redis.call('HGET', KEYS[10], CLAIMED .. nextKey) or '', id}
    end
  end
  return {{hash, id, 0, 0}, r, claim}
end
`;

/**
 * RELEASE, BullMQ's moveToFinished of the job and CLAIM of the next one in one script
 * (queue/bull-scripts.ts): the worker's steady state is then one round trip per job for releasing the key,
 * adding its follow-up, finishing the job, fetching the next and claiming it. KEYS: scriptKeys() (10),
 * moveToFinished's 14, then the add's id counter: each key once, the follow-up's add finding the others among
 * moveToFinished's (ADD_KEYS_IN_FINISH). ARGV: RELEASE's 9, moveToFinished's 9, then the reconcile job's name
 * and the lease (ms) for claimFetched. The key is released first, as when the two ran one after the other:
 * should BullMQ refuse to finish the job (its lock was lost), the release stands (it is fenced by its token)
 * and BullMQ's error code is returned. Returns {moveToFinished's answer, RELEASE's answer, claimFetched's
 * answer for the next job}.
 */
export const RELEASE_AND_FINISH = `${LIVE}${KEEP_VERSION_LUA}${HELD}${SCHEDULE}${FENCE_LUA}${BULL_ADD_LUA}${RELEASE_FN}${BULL_FINISH_LUA}${CLAIM_FN}${REFETCH}
-- One clock reading for the release and the next job's claim: the claim's lease then counts from before
-- BullMQ's finish ran, never later than Redis's own view.
local now = nowMs()
local ak = ${FINISH_ADD_KEYS_LUA}
local r, replayed = release(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], {ak, ARGV[7], ARGV[8], ARGV[9]}, now)
-- Resent after a lost reply: the job was finished by the first run (KEYS[22] is its hash). The job that run
-- fetched (and claimed) is handed over again, so it starts now rather than after its lock and lease run out.
if replayed and redis.call('HEXISTS', KEYS[22], 'finishedOn') == 1 then return refetch(ARGV[1], ARGV[2], r, ARGV[6], ARGV[17]) end
local bk, ba = {}, {}
for i = 1, 14 do bk[i] = KEYS[10 + i] end
for i = 1, 9 do ba[i] = ARGV[9 + i] end
local fetched = bullFinish(bk, ba)
if type(fetched) == 'table' and type(fetched[2]) == 'string' then
  redis.call('HSET', KEYS[9], NEXT .. ARGV[1], ARGV[2] .. '|' .. fetched[2])
end
return {fetched, r, claimFetched(fetched, ARGV[19], ARGV[6], ARGV[20], now)}
`;

/**
 * BullMQ's moveToActive and CLAIM of the job it fetched, in one script: a worker that was waiting starts
 * a job in one round trip, as a plain BullMQ worker does. KEYS: scriptKeys() (10), then moveToActive's 11.
 * ARGV: moveToActive's 3, then the reconcile job's name, the job key prefix and the lease (ms).
 * Returns {moveToActive's answer, claimFetched's answer}.
 */
export const MOVE_TO_ACTIVE_AND_CLAIM = `${LIVE}${KEEP_VERSION_LUA}${HELD}${BULL_MOVE_TO_ACTIVE_LUA}${CLAIM_FN}
local mk = {}
for i = 1, 11 do mk[i] = KEYS[10 + i] end
local fetched = bullMoveToActive(mk, {ARGV[1], ARGV[2], ARGV[3]})
return {fetched, claimFetched(fetched, ARGV[4], ARGV[5], ARGV[6], nowMs())}
`;

/** How long a key's last RELEASE answer is kept for a resend of it (from its claim, by the token's clock part). */
export const RELEASED_KEEP_MS = 15 * 60_000;

/**
 * ARGV: jobKeyPrefix. Removes entries that belong to no live job or claim (see queue/sweep.ts), and records a
 * request (schedule()) for each key that still had one, in the same script: a reply lost between the two steps
 * would otherwise drop the request. Returns {removedCount, then per key to add: key, action, jobId, delayMs,
 * readd}: the jobs the caller adds (WorkQueue.apply). A key whose recorded id has no job yet (this sweep's, or
 * another caller's within the pending grace) is handed out again as an add of that same id, which BullMQ ignores
 * once the job exists: a resent SWEEP adds what its lost first run recorded.
 * One pass over the queue's structures, so its cost is proportional to the keys they hold.
 */
export const SWEEP = `${LIVE}${KEEP_VERSION_LUA}${HELD}${SCHEDULE}
local now = nowMs()
local removed, requeue, seen = 0, {}, {}
local function again(key)
  if not seen[key] then seen[key] = true; table.insert(requeue, key) end
end
local function leaseOf(key) return tonumber(redis.call('ZSCORE', KEYS[8], key)) end
local active = redis.call('HGETALL', KEYS[3])
for i = 1, #active, 2 do
  local key = active[i]
  local lease = leaseOf(key)
  if not lease or lease < now - ${PENDING_GRACE_MS} then
    redis.call('HDEL', KEYS[3], key)
    redis.call('ZREM', KEYS[8], key)
    returnClaimedVersion(key)
    removed = removed + 1
    again(key)
  end
end
for _, key in ipairs(redis.call('ZRANGE', KEYS[8], 0, -1)) do
  if not redis.call('HGET', KEYS[3], key) then redis.call('ZREM', KEYS[8], key); removed = removed + 1 end
end
local pending = redis.call('HGETALL', KEYS[1])
for i = 1, #pending, 2 do
  local key, id = pending[i], pending[i + 1]
  local since = tonumber(redis.call('HGET', KEYS[7], key))
  if not live(ARGV[1], id) then
    if not since or now - since >= ${PENDING_GRACE_MS} then
      redis.call('HDEL', KEYS[1], key)
      redis.call('HDEL', KEYS[7], key)
      redis.call('ZREM', KEYS[2], key)
      removed = removed + 1
    end
    again(key)
  end
end
for _, key in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  if not redis.call('HGET', KEYS[1], key) then redis.call('ZREM', KEYS[2], key); removed = removed + 1; again(key) end
end
for _, key in ipairs(redis.call('HKEYS', KEYS[7])) do
  if not redis.call('HGET', KEYS[1], key) then redis.call('HDEL', KEYS[7], key); removed = removed + 1 end
end
for _, key in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
  if not redis.call('HGET', KEYS[3], key) then redis.call('ZREM', KEYS[4], key); removed = removed + 1; again(key) end
end
for _, key in ipairs(redis.call('HKEYS', KEYS[5])) do
  if not redis.call('HGET', KEYS[1], key) and not redis.call('HGET', KEYS[3], key) then
    redis.call('HDEL', KEYS[5], key)
    removed = removed + 1
  end
end
-- A version recorded for a key with no job, claim or request left (its job vanished) would only ever be handed
-- to a later, unrelated run: dropped, unless the key is enqueued again just below.
-- A claim's own record (CLAIMED .. key) goes with its claim.
for _, field in ipairs(redis.call('HKEYS', KEYS[10])) do
  local claimed = string.sub(field, 1, #CLAIMED) == CLAIMED
  local key = claimed and string.sub(field, #CLAIMED + 1) or field
  local orphan = not redis.call('HGET', KEYS[3], key) and (claimed or (not seen[key] and not redis.call('HGET', KEYS[1], key)))
  if orphan then
    redis.call('HDEL', KEYS[10], field)
    removed = removed + 1
  end
end
-- A resent RELEASE comes within seconds of the first, but may come after a tick: its answer (and the job it
-- fetched) is kept for RELEASED_KEEP_MS from its claim. A token is at least its claim's time in ms × 1000.
local released = redis.call('HGETALL', KEYS[9])
for i = 1, #released, 2 do
  local v = released[i + 1]
  local bar = string.find(v, '|', 1, true)
  local token = bar and tonumber(string.sub(v, 1, bar - 1))
  if not token or token / 1000 < now - ${RELEASED_KEEP_MS} then
    redis.call('HDEL', KEYS[9], released[i])
    removed = removed + 1
  end
end
local out = {tostring(removed)}
for _, key in ipairs(requeue) do
  -- A request's recorded time stays (a requeueAfter not due yet is not brought forward).
  local due = tonumber(redis.call('ZSCORE', KEYS[2], key)) or now
  local r = schedule(key, math.max(due, now), now, ARGV[1])
  if r[1] == 'add' then
    table.insert(out, key)
    for j = 1, 4 do table.insert(out, r[j]) end
  end
end
return out
`;
