import { batched, luaScript as script } from './lua-script.js';
import { LOCK_PRELUDE as PRELUDE } from './lock-prelude.js';

/**
 * Acquire or re-enter a hold.
 * KEYS: state, leases, writers, readers, fair queue (member '<w|r>:<waiter id>' -> arrival, µs),
 *       fair deadlines (same members -> registration expiry, ms), fence floor (the largest fencing token issued in
 *       the lock's hash slot, `fenceFloorKey`: it only rises, so a token never goes back with the server's clock).
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
      -- Past the key's last token and its slot's floor (KEYS[7]): one SET … GET reads the floor and raises it, set
      -- again in the rare case that the floor was not behind.
      local fence = math.max(nowus, tonumber(st[2]) + 1)
      local f = string.format('%.0f', fence)
      local floor = tonumber(redis.call('SET', KEYS[7], f, 'GET') or '0')
      if floor >= fence then
        fence = floor + 1
        f = string.format('%.0f', fence)
        redis.call('SET', KEYS[7], f)
      end
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
  -- The fencing token: Redis time in µs, as digits (the same as string.format('%.0f', nowus), for less), or past
  -- the largest token the lock's slot issued, which its floor (KEYS[7]) keeps (the key has no state, so no token of
  -- its own). One command reads the floor and writes this grant's token into it (SET … GET); written again in the
  -- rare case that the floor is not behind the clock, since it must only rise.
  local f, fence = t[1] .. string.sub(1000000 + t[2], 2), nowus
  local last = tonumber(redis.call('SET', KEYS[7], f, 'GET') or '0')
  if last >= fence then
    fence = last + 1
    f = string.format('%.0f', fence)
    redis.call('SET', KEYS[7], f)
  end
  if mode == 'w' then
    redis.call('HSET', KEYS[1], field, '1|' .. seq .. '|' .. f .. '|' .. now .. '|' .. ARGV[5], 'f', f, 'w', token)
  else
    redis.call('HSET', KEYS[1], field, '1|' .. seq .. '|' .. f .. '|' .. now .. '|' .. ARGV[5], 'f', f)
  end
  -- Single-holder form: the lease is the state's own expiry.
  redis.call('PEXPIREAT', KEYS[1], now + lease)
  if drop then redis.call('ZREM', mode == 'w' and KEYS[3] or KEYS[4], waiter) end
  return {1, fence, 0}
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
  local fence = math.max(nowus, tonumber(redis.call('HGET', K.state, 'f') or '0') + 1,
    tonumber(redis.call('GET', K.fence) or '0') + 1)
  local f = fmt(fence)
  redis.call('HSET', K.state, field, '1|' .. seq .. '|' .. f .. '|' .. now .. '|' .. ARGV[5], 'f', f)
  redis.call('SET', K.fence, f)
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

/** `ACQUIRE` for several locks of one process at once (see `batched`). */
export const ACQUIRE_BATCH = batched(ACQUIRE, 7);
