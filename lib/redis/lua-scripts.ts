import { createHash } from 'node:crypto';

/**
 * Every Lua script of the library. Each is a constant: user data only ever reaches Redis through KEYS and ARGV.
 * Scripts read the clock with `TIME` (Redis server time), never a client's.
 *
 * Per lock (see `key-layout.ts`), with keys in this order for every per-lock script:
 *   KEYS[1] state hash     `w` writer token, `f` last fencing token, `h:<token>` = "count|seq|fence|since|info"
 *   KEYS[2] leases zset    holder token -> lease expiry (ms)
 *   KEYS[3] writers zset   waiting (non-fair) writer id -> registration expiry (ms)
 *   KEYS[4] readers zset   waiting (non-fair) reader id -> registration expiry (ms)
 *   KEYS[5] queue zset     fair waiter '<w|r>:<id>' -> arrival (Redis time, µs)
 *   KEYS[6] deadlines zset fair waiter '<w|r>:<id>' -> registration expiry (ms)
 *
 * Single-holder form: a lock with one holder and nothing else going on is only the state hash, and that holder's
 * lease is the hash's own expiry (PEXPIRETIME). The leases sorted set exists only in the full form, which a script
 * builds (`expand`) as soon as anything else than the sole holder's own acquire fast path, release, renewal or
 * extension touches the lock. So: state without leases = single-holder form, its one `h:` field holds the lease
 * while the key exists; state with leases = full form, both keys expiring together, at the latest lease or (after a
 * release on the shared fast path, which leaves the expiry as it was) later. Readers join and leave a full-form lock
 * that nobody waits for on shared fast paths: a join takes the full pass (which purges) as soon as any lease ran
 * out, so holders that died do not pile up; a leave does not purge.
 *
 * `seq` is an increasing operation number per owner (so per token): a command that the client re-sends after a
 * reconnect carries a `seq` Redis has already seen and is not applied a second time.
 */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
}

function script(name: string, source: string): LuaScript {
  return Object.freeze({ name, source, sha: createHash('sha1').update(source).digest('hex') });
}

/** A script of another primitive (the semaphore's, `permit-scripts.ts`), made as the lock scripts are. */
export const luaScript = script;

/**
 * How long a waiter's registration lives without a heartbeat, in milliseconds (Redis time). Live waiters renew it
 * every `WAITER_HEARTBEAT_MS` (KEEP_WAITING, batched per process), so a waiter that died or froze is passed over
 * within this. See docs/internals.md, "Waiter liveness".
 */
export const WAITER_LEASE_MS = 1_000;
/** How often a process renews its waiters' registrations, in milliseconds: several times per `WAITER_LEASE_MS`. */
export const WAITER_HEARTBEAT_MS = 150;
/**
 * How long a waiter woken by name has to take its turn, in milliseconds, unless its heartbeat shows it alive: longer
 * than one heartbeat period, so only a waiter whose process is dead or stalled loses its turn.
 */
export const CLAIM_MS = 250;

/** Helpers shared by the scripts: clock, purge of dead holders and waiters, expiry bookkeeping, wake-ups. */
const PRELUDE = `
local WAITER_LEASE_MS, CLAIM_MS = ${WAITER_LEASE_MS}, ${CLAIM_MS}

local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- The keys of one lock, in the order every per-lock script receives them.
-- The wake-up channel is the state key's name with ':ch' (a channel, not a key: it need not be in KEYS).
local function lockKeys(keys)
  return { state = keys[1], leases = keys[2], writers = keys[3], readers = keys[4], queue = keys[5], deadlines = keys[6], channel = keys[1] .. ':ch' }
end

-- Single-holder form to full form: the sole holder's lease, kept as the state's own expiry, moves into the
-- leases set. No-op when the lock is free or already in full form. A lease that ran out by now (Redis shows keys
-- as of the script's start, and a batch runs its items later than that) frees the lock instead: a leases set
-- expiring in the past would vanish at once and leave the holder's record without a lease.
local function expand(K, now)
  if redis.call('EXISTS', K.leases) == 1 then return end
  local at = redis.call('PEXPIRETIME', K.state)
  if at < 0 then return end
  if at <= now then
    redis.call('DEL', K.state)
    return
  end
  local fields = redis.call('HKEYS', K.state)
  for i = 1, #fields do
    if string.sub(fields[i], 1, 2) == 'h:' then
      redis.call('ZADD', K.leases, at, string.sub(fields[i], 3))
    end
  end
  redis.call('PEXPIREAT', K.leases, at)
end

-- Drops holders whose lease ran out. Returns true if any was dropped.
local function purge(K, now)
  local dead = redis.call('ZRANGEBYSCORE', K.leases, '-inf', now)
  if #dead == 0 then return false end
  local writer = redis.call('HGET', K.state, 'w')
  for i = 1, #dead do
    redis.call('HDEL', K.state, 'h:' .. dead[i])
    if dead[i] == writer then redis.call('HDEL', K.state, 'w') end
  end
  redis.call('ZREMRANGEBYSCORE', K.leases, '-inf', now)
  return true
end

-- Drops fair-queue entries whose registration ran out (a waiter that died or stopped refreshing).
local function purgeQueue(K, now)
  local dead = redis.call('ZRANGEBYSCORE', K.deadlines, '-inf', now)
  if #dead == 0 then return end
  redis.call('ZREM', K.queue, unpack(dead))
  redis.call('ZREMRANGEBYSCORE', K.deadlines, '-inf', now)
end

-- After holders changed: delete the lock when nobody holds it, else let both keys live as long as the
-- longest lease (so a lock whose every holder died frees itself).
local function settle(K)
  local top = redis.call('ZRANGE', K.leases, -1, -1, 'WITHSCORES')
  if #top == 0 then
    redis.call('DEL', K.state, K.leases)
  else
    redis.call('PEXPIREAT', K.state, top[2])
    redis.call('PEXPIREAT', K.leases, top[2])
  end
end

-- Wakes whoever can now get in. Fair waiters first, by name: the head of the queue, or every reader in the
-- run of readers at its head. Otherwise one waiting writer if the lock is free, else every waiting reader
-- when no writer holds or waits. Messages name their waiter, so only that waiter retries.
-- A waiter woken by name has the claim window to take its turn: its registration is cut to run out then (a live
-- waiter's heartbeat, KEEP_WAITING, renews it), so a waiter that died or froze is passed over once it has passed.
-- One whose registration runs out within the window already was woken (or has stopped renewing): not again.
-- The lock is free when its state is gone (scripts delete it with the last holder). now may be nil: read here then.
-- Returns whom it woke, for KEEP_WAITING: fair queue members ('w:<id>', 'r:<id>'), a writer ('<id>'), or 'r'
-- (every non-fair reader); nil for nobody. quiet: readers are not told by a message (the heartbeat that asks tells
-- its own; every other process's heartbeat tells its readers within a period), so heartbeats do not repeat the
-- broadcast while readers are joining.
local function wake(K, channel, now, quiet)
  if redis.call('EXISTS', K.writers, K.readers, K.queue) == 0 then return end
  if redis.call('HEXISTS', K.state, 'w') == 1 then return end
  if not now then now = clock() end
  purgeQueue(K, now)
  local q = redis.call('ZRANGE', K.queue, 0, 63)
  if #q > 0 then
    local woken = {}
    if string.sub(q[1], 1, 1) == 'w' then
      if redis.call('EXISTS', K.state) == 0 then woken[1] = q[1] end
    else
      for i = 1, #q do
        if string.sub(q[i], 1, 1) ~= 'r' then break end
        woken[i] = q[i]
      end
    end
    for i = 1, #woken do
      if redis.call('ZADD', K.deadlines, 'XX', 'LT', 'CH', now + CLAIM_MS, woken[i]) == 1 then
        redis.call('PUBLISH', channel, 'f:' .. string.sub(woken[i], 3))
      end
    end
    return woken
  end
  local w = redis.call('ZRANGEBYSCORE', K.writers, '(' .. now, '+inf', 'LIMIT', 0, 1)
  if #w > 0 then
    if redis.call('EXISTS', K.state) == 1 then return end
    if redis.call('ZADD', K.writers, 'XX', 'LT', 'CH', now + CLAIM_MS, w[1]) == 1 then
      redis.call('PUBLISH', channel, 'w:' .. w[1])
    end
    return { w[1] }
  end
  if redis.call('ZCOUNT', K.readers, '(' .. now, '+inf') > 0 then
    if not quiet then redis.call('PUBLISH', channel, 'r') end
    return { 'r' }
  end
end

local function expireWith(key)
  local top = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if #top > 0 then redis.call('PEXPIREAT', key, top[2]) end
end

local function fmt(n) return string.format('%.0f', n) end
`;

/**
 * Acquire or re-enter a hold.
 * KEYS: state, leases, writers, readers, fair queue (member '<w|r>:<waiter id>' -> arrival, µs),
 *       fair deadlines (same members -> registration expiry, ms).
 * ARGV: 1 token, 2 mode ('w'|'r') followed by any flags: 'e' = re-entry only (fail with blockedBy 4 unless the
 *       token already holds the lock), 'f' = fair: queue in arrival order; 3 leaseMs, 4 seq, 5 holder info,
 *       6 waiter id ('' = do not register as a waiter), 7 write token the caller holds on this key (absent or '' if
 *       none: lets a write owner take a read lock). Wake-ups go to the lock's channel, KEYS[1] .. ':ch'.
 * Returns {1, fencingToken, reentered (0|1)} when granted;
 *         {0, waitMs, blockedBy} when not: waitMs is how long until the blocking leases or registrations can have
 *         run out; blockedBy 1 = a writer holds it, 2 = readers hold it, 3 = a writer waits (writer
 *         preference), 4 = re-entry asked but this token no longer holds the lock, 5 = fair waiters come first.
 */
export const ACQUIRE = script(
  'acquire',
  `
local token, flags, lease, seq = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local mode, waiter, downgrade = string.sub(flags, 1, 1), ARGV[6], ARGV[7] or ''
local fair = string.find(flags, 'f', 2, true) ~= nil
local field = 'h:' .. token
local t = redis.call('TIME')
local now, nowus = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), tonumber(t[1]) * 1000000 + tonumber(t[2])
local reentry = string.find(flags, 'e', 2, true) ~= nil

-- Fast path, ahead of the prelude's helpers so that it does not pay for defining them: nobody holds the lock and
-- nobody queues for it (the state is deleted with its last holder). KEYS[1] state, [3] writers, [4] readers,
-- [5] fair queue. Most often no waiter set exists either: one EXISTS tells, and there is no registration to drop.
local free, drop = false, false
if not reentry then
  local present = redis.call('EXISTS', KEYS[1], KEYS[5], KEYS[3], KEYS[4])
  -- For a reader (not a write owner's downgrade), when one of those keys exists: the state's writer, last fencing
  -- token and this token's record (the state exists exactly when it has a fencing token).
  local st = present == 1 and mode == 'r' and downgrade == '' and redis.call('HMGET', KEYS[1], 'w', 'f', field)
  if present == 0 then
    free = true
  elseif st and st[2] then
    -- Shared fast path: readers hold the lock in full form (KEYS[2] leases exists, its shortest lease still
    -- running: a holder that ran out takes the full pass, which purges it), no writer holds it, nobody waits (the
    -- state is the one key of the four), and this token holds nothing here: join them.
    local shortest = not st[1] and not st[3] and redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
    if shortest and shortest[2] and tonumber(shortest[2]) > now then
      local fence = nowus
      if tonumber(st[2]) >= fence then fence = tonumber(st[2]) + 1 end
      local f = string.format('%.0f', fence)
      redis.call('HSET', KEYS[1], field, '1|' .. seq .. '|' .. f .. '|' .. now .. '|' .. ARGV[5], 'f', f)
      redis.call('ZADD', KEYS[2], now + lease, token)
      redis.call('PEXPIREAT', KEYS[1], now + lease, 'GT')
      redis.call('PEXPIREAT', KEYS[2], now + lease, 'GT')
      return {1, fence, 0}
    end
  elseif redis.call('EXISTS', KEYS[1], KEYS[5]) == 0 then
    if mode == 'w' then
      free, drop = true, waiter ~= ''
    elseif redis.call('ZCOUNT', KEYS[3], '(' .. now, '+inf') == 0 then
      free, drop = true, waiter ~= ''
    end
  end
end
if free then
  -- The fencing token, Redis time in µs, as digits (the same as string.format('%.0f', nowus), for less).
  local f = t[1] .. string.sub(1000000 + t[2], 2)
  if mode == 'w' then
    redis.call('HSET', KEYS[1], field, '1|' .. seq .. '|' .. f .. '|' .. now .. '|' .. ARGV[5], 'f', f, 'w', token)
  else
    redis.call('HSET', KEYS[1], field, '1|' .. seq .. '|' .. f .. '|' .. now .. '|' .. ARGV[5], 'f', f)
  end
  -- Single-holder form: the lease is the state's own expiry.
  redis.call('PEXPIREAT', KEYS[1], now + lease)
  if drop then redis.call('ZREM', mode == 'w' and KEYS[3] or KEYS[4], waiter) end
  return {1, nowus, 0}
end
` +
    PRELUDE +
    `
local K = lockKeys(KEYS)
-- A semaphore lives under this key (its state has a limit): refused, nothing changed (the fast paths above never
-- take a semaphore's state for a lock's: it has no 'f').
if redis.call('HEXISTS', K.state, 'n') == 1 then return {-1, 0, 0} end
expand(K, now)
local purged = purge(K, now)
local held = redis.call('HGET', K.state, field)
if held then
  -- Re-entry by the owner context (or the client re-sending this very command after a reconnect).
  local count, hseq, hfence, rest = string.match(held, '^(%d+)|(%d+)|(%d+)|(.*)$')
  if tonumber(seq) <= tonumber(hseq) then return {1, tonumber(hfence), 1} end
  redis.call('HSET', K.state, field, (tonumber(count) + 1) .. '|' .. seq .. '|' .. hfence .. '|' .. rest)
  local e = now + lease
  if e > tonumber(redis.call('ZSCORE', K.leases, token)) then
    redis.call('ZADD', K.leases, e, token)
    redis.call('PEXPIREAT', K.state, e, 'GT')
    redis.call('PEXPIREAT', K.leases, e, 'GT')
  end
  return {1, tonumber(hfence), 1}
end
if reentry then
  if purged then
    settle(K)
    wake(K, K.channel, now)
  end
  return {0, 0, 4}
end

-- Fair queue: a queued waiter may enter when it is at the head (a reader: when only readers are ahead of it);
-- anyone else waits while the queue is not empty.
local member = ''
if waiter ~= '' then member = (mode == 'w' and 'w:' or 'r:') .. waiter end
local queued, ahead = false, false
if redis.call('EXISTS', K.queue) == 1 then
  purgeQueue(K, now)
  local rank = member ~= '' and redis.call('ZRANK', K.queue, member)
  if rank then
    queued = true
    if rank > 0 then
      if mode == 'w' then
        ahead = true
      else
        local before = redis.call('ZRANGE', K.queue, 0, rank - 1)
        for i = 1, #before do
          if string.sub(before[i], 1, 1) ~= 'r' then ahead = true break end
        end
      end
    end
  elseif redis.call('EXISTS', K.queue) == 1 then
    ahead = true
  end
end

local writer = redis.call('HGET', K.state, 'w')
local blocked = 0
if mode == 'w' then
  if writer then blocked = 1 elseif redis.call('ZCARD', K.leases) > 0 then blocked = 2 end
elseif writer then
  if writer ~= downgrade then blocked = 1 end
elseif downgrade == '' and not fair and not queued and redis.call('ZCOUNT', K.writers, '(' .. now, '+inf') > 0 then
  blocked = 3
end
-- A write owner taking a read lock (downgrade) never queues behind anyone.
if blocked == 0 and ahead and not (mode == 'r' and writer and writer == downgrade) then blocked = 5 end

if blocked == 0 then
  local last = tonumber(redis.call('HGET', K.state, 'f') or '0')
  local fence = nowus
  if last >= fence then fence = last + 1 end
  local f = fmt(fence)
  redis.call('HSET', K.state, field, '1|' .. seq .. '|' .. f .. '|' .. now .. '|' .. ARGV[5], 'f', f)
  if mode == 'w' then redis.call('HSET', K.state, 'w', token) end
  redis.call('ZADD', K.leases, now + lease, token)
  settle(K)
  if waiter ~= '' then redis.call('ZREM', mode == 'w' and K.writers or K.readers, waiter) end
  if queued then
    redis.call('ZREM', K.queue, member)
    redis.call('ZREM', K.deadlines, member)
  end
  if purged then wake(K, K.channel, now) end
  return {1, fence, 0}
end

if purged then
  settle(K)
  wake(K, K.channel, now)
end
local untilMs
-- When to retry if no wake-up comes first: when the blocking leases can have run out. Behind waiting writers or
-- the fair queue with the lock held, that is the holders' leases too: waiters that die or freeze are passed over by
-- the wake-ups and the live waiters' heartbeats (KEEP_WAITING), not by everyone polling their registrations.
if blocked == 1 then
  untilMs = tonumber(redis.call('ZSCORE', K.leases, writer) or now)
else
  untilMs = tonumber(redis.call('ZRANGE', K.leases, -1, -1, 'WITHSCORES')[2] or 0)
  if untilMs <= now and blocked == 3 then
    untilMs = tonumber(redis.call('ZRANGE', K.writers, -1, -1, 'WITHSCORES')[2] or now)
  elseif untilMs <= now and blocked == 5 then
    local head = redis.call('ZRANGE', K.queue, 0, 0)[1]
    untilMs = tonumber((head and redis.call('ZSCORE', K.deadlines, head)) or now)
  end
end
local waitMs = math.max(untilMs - now, 0)
if member ~= '' then
  -- The registration's liveness lease: the waiter's heartbeat renews it while the waiter lives.
  local expiry = now + WAITER_LEASE_MS
  if fair or queued then
    if not queued then redis.call('ZADD', K.queue, nowus, member) end
    redis.call('ZADD', K.deadlines, expiry, member)
    expireWith(K.deadlines)
    local queueEnd = redis.call('ZRANGE', K.deadlines, -1, -1, 'WITHSCORES')[2]
    redis.call('PEXPIREAT', K.queue, queueEnd)
  else
    local waiting = mode == 'w' and K.writers or K.readers
    redis.call('ZADD', waiting, expiry, waiter)
    expireWith(waiting)
  end
end
return {0, waitMs, blocked}
`,
);

/**
 * Release one level of a hold, or all of it.
 * ARGV: 1 token, 2 seq ('' = release every level: an external release by token), 3 holdAtLeastMs (optional): when the
 * hold ends less than that long after it was granted (its record's `since`, Redis time), it is kept until then
 * instead, finished (hold count 0, no renewal: the holder dropped it), its lease cut to that time, and nobody is
 * woken (nobody can enter before then; waiters retry when the lease ends).
 * Returns 2 when the hold ended (or finished), 1 when a level was released and the hold goes on (or this release was
 * already applied), 0 when the token holds nothing here.
 */
export const RELEASE = script(
  'release',
  `
local token, seq = ARGV[1], ARGV[2]
local field = 'h:' .. token
local record = redis.call('HMGET', KEYS[1], field, 'w')
local held = record[1]
local count, hseq, rest
local last = false
if held then
  count, hseq, rest = string.match(held, '^(%d+)|(%d+)|(.*)$')
  if seq ~= '' and tonumber(seq) <= tonumber(hseq) then return 1 end
  last = seq == '' or count == '1'
  local atLeast = last and tonumber(ARGV[3] or '0') or 0
  if atLeast > 0 then
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    local holdUntil = tonumber(string.match(rest, '^%d+|(%d+)|')) + atLeast
    if holdUntil > now then
      redis.call('HSET', KEYS[1], field, '0|' .. (seq == '' and hseq or seq) .. '|' .. rest)
      if redis.call('EXISTS', KEYS[2]) == 1 then
        redis.call('ZADD', KEYS[2], holdUntil, token)
        local top = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')[2]
        redis.call('PEXPIREAT', KEYS[1], top)
        redis.call('PEXPIREAT', KEYS[2], top)
      else
        -- Single-holder form: the lease is the state's own expiry.
        redis.call('PEXPIREAT', KEYS[1], holdUntil)
      end
      return 2
    end
  end
  -- Fast path, ahead of the prelude's helpers: the last level of a lock in single-holder form (no leases set: this
  -- is the sole holder, its lease running since the state exists) with nobody waiting. KEYS[2] leases, [3] writers,
  -- [4] readers, [5] fair queue.
  local present = last and redis.call('EXISTS', KEYS[2], KEYS[3], KEYS[4], KEYS[5])
  if present == 0 then
    redis.call('DEL', KEYS[1])
    return 2
  end
  -- Shared fast path: the last level of one holder of several, nobody waiting (the one key of the four that exists
  -- is the leases set, full form, since it has this token's lease), and that lease still running. Other holders
  -- whose lease ran out stay until the next full pass purges them.
  local s = present == 1 and redis.call('ZSCORE', KEYS[2], token)
  if s then
    local t = redis.call('TIME')
    if tonumber(s) > tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) then
      if record[2] == token then
        redis.call('HDEL', KEYS[1], field, 'w')
      else
        redis.call('HDEL', KEYS[1], field)
      end
      redis.call('ZREM', KEYS[2], token)
      -- Nobody left: the lock is gone. Else both keys keep their expiry, at least the longest lease left.
      if redis.call('ZCARD', KEYS[2]) == 0 then
        redis.call('DEL', KEYS[1], KEYS[2])
      end
      return 2
    end
  end
end
` +
    PRELUDE +
    `
local K = lockKeys(KEYS)
local now
if held then
  if redis.call('EXISTS', K.leases) == 0 then
    if last then
      redis.call('DEL', K.state)
      wake(K, K.channel, nil)
      return 2
    end
    redis.call('HSET', K.state, field, (tonumber(count) - 1) .. '|' .. seq .. '|' .. rest)
    return 1
  end
  now = clock()
  -- Fast path: the last level of the only hold, its lease still running.
  if last and redis.call('ZCARD', K.leases) == 1 then
    local s = redis.call('ZSCORE', K.leases, token)
    if s and tonumber(s) > now then
      redis.call('DEL', K.state, K.leases)
      wake(K, K.channel, now)
      return 2
    end
  end
else
  now = clock()
end
local purged = purge(K, now)
if held then held = redis.call('HGET', K.state, field) end
if not held then
  if purged then
    settle(K)
    wake(K, K.channel, now)
  end
  return 0
end
if seq ~= '' then
  if tonumber(count) > 1 then
    redis.call('HSET', K.state, field, (tonumber(count) - 1) .. '|' .. seq .. '|' .. rest)
    return 1
  end
end
redis.call('HDEL', K.state, field)
if redis.call('HGET', K.state, 'w') == token then
  redis.call('HDEL', K.state, 'w')
end
redis.call('ZREM', K.leases, token)
settle(K)
wake(K, K.channel, now)
return 2
`,
);

/**
 * Watchdog renewal of many holds in one call (one round trip per tick).
 * KEYS: state and leases of each hold, in pairs (2 keys per hold). ARGV: token and leaseMs of each hold, in pairs.
 * A hold whose lease already ran out is not revived. Returns one entry per hold: 1 renewed, 0 not held.
 */
export const RENEW_MANY = script(
  'renew-many',
  `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for i = 1, #ARGV / 2 do
  local state, leases = KEYS[2 * i - 1], KEYS[2 * i]
  local token, lease = ARGV[2 * i - 1], tonumber(ARGV[2 * i])
  local s = redis.call('ZSCORE', leases, token)
  if s and tonumber(s) > now then
    local e = now + lease
    if e > tonumber(s) then
      redis.call('ZADD', leases, e, token)
      redis.call('PEXPIREAT', state, e, 'GT')
      redis.call('PEXPIREAT', leases, e, 'GT')
    end
    out[i] = 1
  elseif not s and redis.call('HEXISTS', state, 'h:' .. token) == 1 then
    out[i] = 0
    if redis.call('EXISTS', leases) == 0 then
      -- Single-holder form: the state's expiry is the lease, running since the state exists.
      redis.call('PEXPIREAT', state, now + lease, 'GT')
      out[i] = 1
    end
  else
    out[i] = 0
  end
end
return out
`,
);

/**
 * Set a hold's lease to run `ms` from now (may shorten it).
 * ARGV: 1 token, 2 ms. Returns 1, or 0 when the token holds nothing here (or its lease ran out).
 */
export const EXTEND = script(
  'extend',
  PRELUDE +
    `
local K = lockKeys(KEYS)
local now = clock()
local s = redis.call('ZSCORE', K.leases, ARGV[1])
if not s and redis.call('HEXISTS', K.state, 'h:' .. ARGV[1]) == 1 then
  if redis.call('EXISTS', K.leases) == 1 then return 0 end
  -- Single-holder form: the state's expiry is the lease.
  redis.call('PEXPIREAT', K.state, now + tonumber(ARGV[2]))
  return 1
end
if not s or tonumber(s) <= now then return 0 end
redis.call('ZADD', K.leases, now + tonumber(ARGV[2]), ARGV[1])
settle(K)
return 1
`,
);

/**
 * A waiter gives up (timeout, abort, shutdown): drop its registration (fair or not) and pass on any wake-up it
 * may have taken. ARGV: 1 waiter id, 2 mode ('w'|'r'). Returns 1 if an entry was removed.
 */
export const CANCEL_WAIT = script(
  'cancel-wait',
  PRELUDE +
    `
local K = lockKeys(KEYS)
local now = clock()
local member = ARGV[2] .. ':' .. ARGV[1]
local removed = redis.call('ZREM', ARGV[2] == 'w' and K.writers or K.readers, ARGV[1])
removed = removed + redis.call('ZREM', K.queue, member)
redis.call('ZREM', K.deadlines, member)
if purge(K, now) then settle(K) end
wake(K, K.channel, now)
return removed
`,
);

/**
 * Waiters' heartbeat: renews the registrations of many waiters of one process (one call per tick and chunk of up to
 * 200 waiters), and wakes whoever can get in now, so that a waiter woken by name that died or froze is passed over
 * once its claim window passed. KEYS: the 6 keys of each waiter's lock, in order (one slot per call;
 * KEEP_WAITING_CROSS_SLOT for several slots of one Cluster node). ARGV: waiter id, mode ('w'|'r') and '1' (fair) or
 * '0' of each.
 * Only an existing, live registration is renewed (never created: a waiter that gave up stays withdrawn).
 * Returns one entry per waiter: 0 not registered (any more): attempt again now (that registers it afresh; a fair
 * waiter joins the back of the queue); 1 renewed; 2 it may get in now (woken now, or within its claim window, then
 * not renewed): attempt now.
 */
export const KEEP_WAITING = script(
  'keep-waiting',
  PRELUDE +
    `
local now = clock()
local out, woken = {}, {}
for i = 1, #ARGV / 3 do
  local k = 6 * (i - 1)
  local K = lockKeys({ KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], KEYS[k + 5], KEYS[k + 6] })
  local id, mode, fair = ARGV[3 * i - 2], ARGV[3 * i - 1], ARGV[3 * i] == '1'
  local member = fair and (mode .. ':' .. id) or id
  local set = fair and K.deadlines or (mode == 'w' and K.writers or K.readers)
  local s = redis.call('ZSCORE', set, member)
  if not s or tonumber(s) <= now then
    out[i] = 0
  elseif tonumber(s) <= now + CLAIM_MS then
    -- Within its claim window: it was woken by name and is taking its turn. Not renewed (that would make another
    -- waiter the one to wake while it takes the lock): attempt now.
    out[i] = 2
  else
    redis.call('ZADD', set, now + WAITER_LEASE_MS, member)
    expireWith(set)
    if fair then redis.call('PEXPIREAT', K.queue, redis.call('ZRANGE', set, -1, -1, 'WITHSCORES')[2]) end
    -- Once per lock: pass over the dead (their registrations ran out, or their claim window passed) and wake the
    -- next. A waiter woken now (or still within its claim window) attempts now.
    if woken[K.state] == nil then woken[K.state] = wake(K, K.channel, now, true) or false end
    out[i] = 1
    local me = (not fair and mode == 'r') and 'r' or member
    for _, m in ipairs(woken[K.state] or {}) do
      if m == me then out[i] = 2 end
    end
  end
end
return out
`,
);

/**
 * Administrative release: frees the lock whoever holds it. No ARGV.
 * Returns 1 if the lock was held, 0 if not, -1 when a semaphore lives under this key (nothing changed: its permits
 * are freed with PERMIT_FORCE_RELEASE, which keeps its stored limit).
 */
export const FORCE_RELEASE = script(
  'force-release',
  PRELUDE +
    `
local K = lockKeys(KEYS)
if redis.call('HEXISTS', K.state, 'n') == 1 then return -1 end
local now = clock()
local live = redis.call('ZCOUNT', K.leases, '(' .. now, '+inf')
if live == 0 and redis.call('EXISTS', K.leases) == 0 then
  -- Single-holder form: held while the state exists.
  live = redis.call('EXISTS', K.state)
end
redis.call('DEL', K.state, K.leases)
wake(K, K.channel, now)
if live > 0 then return 1 end
return 0
`,
);

/**
 * Read-only snapshot for `inspect`. Returns {now, stateFields (flat HGETALL), leases (flat member/score),
 * live waiting writers, live waiting readers} (waiters counted fair and non-fair alike).
 */
export const INSPECT = script(
  'inspect',
  PRELUDE +
    `
local K = lockKeys(KEYS)
local now = clock()
local state = redis.call('HGETALL', K.state)
local leases = redis.call('ZRANGEBYSCORE', K.leases, '(' .. now, '+inf', 'WITHSCORES')
if #leases == 0 and #state > 0 and redis.call('EXISTS', K.leases) == 0 then
  -- Single-holder form: the sole holder's lease is the state's expiry.
  local at = redis.call('PEXPIRETIME', K.state)
  for i = 1, #state, 2 do
    if at > now and string.sub(state[i], 1, 2) == 'h:' then leases = { string.sub(state[i], 3), at } end
  end
end
local live = redis.call('ZRANGEBYSCORE', K.deadlines, '(' .. now, '+inf')
local fairWriters = 0
for i = 1, #live do
  if string.sub(live[i], 1, 1) == 'w' then fairWriters = fairWriters + 1 end
end
return {
  now,
  state,
  leases,
  redis.call('ZCOUNT', K.writers, '(' .. now, '+inf') + fairWriters,
  redis.call('ZCOUNT', K.readers, '(' .. now, '+inf') + #live - fairWriters
}
`,
);

/**
 * RENEW_MANY for a Redis Cluster node: many holds of several slots that one master serves, in one call (Redis 7.0+).
 * See `crossSlot`.
 */
export const RENEW_MANY_CROSS_SLOT = crossSlot(RENEW_MANY);

/**
 * The variant of a renewal script (RENEW_MANY, the semaphore's PERMIT_RENEW_MANY: state and leases in KEYS, token and
 * leaseMs in ARGV, in pairs) for many holds of several slots that one Cluster master serves, in one call (Redis 7.0+).
 * ARGV: state, leases, token and leaseMs of each hold, in fours. See `crossSlotVariant`.
 */
export function crossSlot(base: LuaScript): LuaScript {
  return crossSlotVariant(
    base,
    `for i = 1, #ARGV / 2 do
  local state, leases = KEYS[2 * i - 1], KEYS[2 * i]
  local token, lease = ARGV[2 * i - 1], tonumber(ARGV[2 * i])`,
    `for i = 1, #ARGV / 4 do
  local state, leases = ARGV[4 * i - 3], ARGV[4 * i - 2]
  local token, lease = ARGV[4 * i - 1], tonumber(ARGV[4 * i])`,
  );
}

/**
 * KEEP_WAITING for a Redis Cluster node: the waiters of one process on locks of several slots that one master serves,
 * in one call (Redis 7.0+). ARGV: the 6 key names of each waiter's lock, then its id, mode and fair flag, in nines.
 * Its wake-ups go out on the channels of those slots (SPUBLISH in the Cluster form: a shard channel of any slot the
 * node serves, as a key). See `crossSlotVariant`.
 */
export const KEEP_WAITING_CROSS_SLOT = crossSlotVariant(
  KEEP_WAITING,
  `for i = 1, #ARGV / 3 do
  local k = 6 * (i - 1)
  local K = lockKeys({ KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], KEYS[k + 5], KEYS[k + 6] })
  local id, mode, fair = ARGV[3 * i - 2], ARGV[3 * i - 1], ARGV[3 * i] == '1'`,
  `for i = 1, #ARGV / 9 do
  local k = 9 * (i - 1)
  local K = lockKeys({ ARGV[k + 1], ARGV[k + 2], ARGV[k + 3], ARGV[k + 4], ARGV[k + 5], ARGV[k + 6] })
  local id, mode, fair = ARGV[k + 7], ARGV[k + 8], ARGV[k + 9] == '1'`,
);

/**
 * The variant of a script over many locks (`perKeys`: its loop over them, reading their names from KEYS) for many
 * locks of several slots that one Cluster master serves, in one call (Redis 7.0+), its loop replaced by `perArgs`,
 * which reads every name from ARGV. Redis routes and checks a command by its declared keys, which must share one
 * slot even for a script flagged `allow-cross-slot-keys`; the flag lets the script touch keys it did not declare, of
 * any slot the node serves. So KEYS[1] is the first item's state (it routes the call), and the key names go in ARGV
 * along with each item's arguments. A key of a slot the node does not serve (it moved) fails the call, possibly after
 * some items were done (the scripts so made are safe to run again for them: see `NodeBatches.route`). The shebang is
 * line 1 of the source, as Redis numbers it in `@user_script:<line>`; `perArgs` has as many lines as `perKeys`.
 */
export function crossSlotVariant(base: LuaScript, perKeys: string, perArgs: string): LuaScript {
  if (!base.source.includes(perKeys)) throw new Error(`${base.name} changed: update its cross-slot variant`);
  return script(`${base.name}-cross-slot`, `#!lua flags=allow-cross-slot-keys${base.source.replace(perKeys, perArgs)}`);
}

const SHARDED = new Map<LuaScript, LuaScript>();

/**
 * The variant of `base` for a Redis Cluster: wake-ups go out with SPUBLISH (sharded pub/sub, Redis 7.0+), so they stay
 * on the shard that serves the lock's slot instead of crossing the cluster bus to every node. Only the command name
 * changes: every `redis.call` stays on its own line.
 */
export function sharded(base: LuaScript): LuaScript {
  let variant = SHARDED.get(base);
  if (!variant) {
    const source = base.source.replace(/redis\.call\('PUBLISH', /g, "redis.call('SPUBLISH', ");
    variant = source === base.source ? base : script(`${base.name}-sharded`, source);
    SHARDED.set(base, variant);
  }
  return variant;
}

/**
 * Many calls of a per-lock script (`ACQUIRE`, `RELEASE`) in one script call, for callers of one process that ask in
 * the same tick: `base`'s very source runs once per item, as a local function of that item's KEYS and ARGV, so each
 * item behaves exactly as its own call would (items are applied in order; a failing item fails the call, leaving
 * the earlier items applied, as separate calls would have been).
 * KEYS: the 6 keys of each item, in order. ARGV: 1 item count, then per item its argument count and arguments.
 * Returns the items' replies, in order.
 */
export function batched(base: LuaScript): LuaScript {
  return script(
    `${base.name}-batch`,
    `
local function one(KEYS, ARGV)
${base.source}
end
local out, k, a = {}, 0, 2
for i = 1, tonumber(ARGV[1]) do
  local argc = tonumber(ARGV[a])
  local args = {}
  for j = 1, argc do args[j] = ARGV[a + j] end
  out[i] = one({ KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], KEYS[k + 5], KEYS[k + 6] }, args)
  k, a = k + 6, a + 1 + argc
end
return out
`,
  );
}

/** `ACQUIRE` for several locks of one process at once (see `batched`). */
export const ACQUIRE_BATCH = batched(ACQUIRE);
/** `RELEASE` for several locks of one process at once (see `batched`). */
export const RELEASE_BATCH = batched(RELEASE);

/** Every script the library may send, standalone and Cluster variants alike (for the SHA → source lookup). */
export const ALL_SCRIPTS: readonly LuaScript[] = [
  ACQUIRE,
  ACQUIRE_BATCH,
  CANCEL_WAIT,
  EXTEND,
  FORCE_RELEASE,
  INSPECT,
  KEEP_WAITING,
  KEEP_WAITING_CROSS_SLOT,
  RELEASE,
  RELEASE_BATCH,
  RENEW_MANY,
  RENEW_MANY_CROSS_SLOT,
].flatMap((s) => {
  const variant = sharded(s);
  return variant === s ? [s] : [s, variant];
});
