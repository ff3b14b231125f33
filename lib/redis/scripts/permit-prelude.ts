import { CLAIM_MS, WAITER_LEASE_MS } from '../../store/waiter-timing.js';

/**
 * The semaphore's Lua scripts. A semaphore uses the key names of a lock on the same key (`key-layout.ts`), so a lock
 * and a semaphore can never both live under one key: each kind's scripts refuse the other's state.
 *
 *   KEYS[1] state hash     `n` limit, `pf` last fencing token, `k` kept-until (ms, set by SET_LIMIT),
 *                          `h:<token>` = "1|seq|fence|since|info" per holder (the lock's record format)
 *   KEYS[2] leases zset    holder token -> lease expiry (ms)
 *   KEYS[3] waiters zset   waiting (non-fair) waiter id -> registration expiry (ms)
 *   KEYS[4] (unused: the lock's waiting readers; passed so that every script takes the same six keys)
 *   KEYS[5] queue zset     fair waiter 'w:<id>' -> arrival (Redis time, µs)
 *   KEYS[6] deadlines zset fair waiter 'w:<id>' -> registration expiry (ms)
 *
 * A semaphore's state has no `f` field and a lock's always has one (and never `n`): that is how each kind tells the
 * other apart. A permit is held exactly while its token has a running lease in the leases set: the state may outlive
 * every lease (a stored limit, waiters), so a holder record without its lease is a permit that ran out, never the
 * lock's single-holder form. Hence renewals and extensions of their own (PERMIT_RENEW_MANY, PERMIT_EXTEND), which
 * never bring such a permit back, and an inspection of its own (PERMIT_INSPECT), which never lists one.
 *
 * The stored limit `n` is written by the first grant and applies to every later caller until the semaphore is idle
 * (no holder, no waiter) and its state is gone, or until SET_LIMIT changes it (which keeps it for a day, idle or not).
 */

/** Helpers the semaphore scripts share: clock, purges of dead permits and waiters, expiries, wake-ups. */
export const PERMIT_PRELUDE = `
local WAITER_LEASE_MS, CLAIM_MS = ${WAITER_LEASE_MS}, ${CLAIM_MS}
local KEEP_SET_LIMIT_MS = 86400000

local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function permitKeys(keys)
  return { state = keys[1], leases = keys[2], waiters = keys[3], queue = keys[5], deadlines = keys[6], channel = keys[1] .. ':ch', fence = keys[7] }
end

local function fmt(n) return string.format('%.0f', n) end

-- Drops permits whose lease ran out (their holder died or froze). Returns true if any was dropped.
local function purge(K, now)
  local dead = redis.call('ZRANGEBYSCORE', K.leases, '-inf', now)
  if #dead == 0 then return false end
  for i = 1, #dead do redis.call('HDEL', K.state, 'h:' .. dead[i]) end
  redis.call('ZREMRANGEBYSCORE', K.leases, '-inf', now)
  return true
end

-- Drops waiter registrations that ran out (a waiter that died, froze, or let its claim window pass).
local function purgeWaiters(K, now)
  redis.call('ZREMRANGEBYSCORE', K.waiters, '-inf', now)
  local dead = redis.call('ZRANGEBYSCORE', K.deadlines, '-inf', now)
  if #dead > 0 then
    redis.call('ZREM', K.queue, unpack(dead))
    redis.call('ZREMRANGEBYSCORE', K.deadlines, '-inf', now)
  end
end

local function topOf(key)
  return tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2] or '0')
end

-- Each key lives as long as what it records: the leases set until its longest lease, the waiter sets until their
-- longest registration, the state (limit, last fencing token, holder records) as long as any of them, or until the
-- time SET_LIMIT keeps it.
local function settle(K, now)
  local leases, waiters, deadlines = topOf(K.leases), topOf(K.waiters), topOf(K.deadlines)
  if leases > now then redis.call('PEXPIREAT', K.leases, leases) else redis.call('DEL', K.leases) end
  if waiters > now then redis.call('PEXPIREAT', K.waiters, waiters) else redis.call('DEL', K.waiters) end
  if deadlines > now then
    redis.call('PEXPIREAT', K.deadlines, deadlines)
    redis.call('PEXPIREAT', K.queue, deadlines)
  else
    redis.call('DEL', K.deadlines, K.queue)
  end
  local last = math.max(leases, waiters, deadlines, tonumber(redis.call('HGET', K.state, 'k') or '0'))
  if last > now then redis.call('PEXPIREAT', K.state, last) else redis.call('DEL', K.state) end
end

-- Wakes as many waiters as there are free permits, by name, fair ones first in arrival order; waiters already woken
-- and within their claim window count as taking a permit (they are not woken again). A waiter woken by name has the
-- claim window to take its permit: its registration is cut to run out then (a live waiter's heartbeat renews it),
-- so one that died or froze is passed over once it has passed. Returns the members woken now.
local function wake(K, now)
  if redis.call('EXISTS', K.waiters, K.queue) == 0 then return end
  purgeWaiters(K, now)
  local free = tonumber(redis.call('HGET', K.state, 'n') or '0') - redis.call('ZCOUNT', K.leases, '(' .. now, '+inf')
  if free <= 0 then return end
  local woken = {}
  local q = redis.call('ZRANGE', K.queue, 0, free - 1)
  for i = 1, #q do
    if redis.call('ZADD', K.deadlines, 'XX', 'LT', 'CH', now + CLAIM_MS, q[i]) == 1 then
      redis.call('PUBLISH', K.channel, 'f:' .. string.sub(q[i], 3))
      woken[#woken + 1] = q[i]
    end
  end
  free = free - #q - redis.call('ZCOUNT', K.waiters, '(' .. now, now + CLAIM_MS)
  if free <= 0 then return woken end
  local w = redis.call('ZRANGEBYSCORE', K.waiters, '(' .. (now + CLAIM_MS), '+inf', 'LIMIT', 0, free)
  for i = 1, #w do
    redis.call('ZADD', K.waiters, 'XX', now + CLAIM_MS, w[i])
    redis.call('PUBLISH', K.channel, 'w:' .. w[i])
    woken[#woken + 1] = w[i]
  end
  return woken
end
`;
