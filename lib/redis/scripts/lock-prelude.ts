import { CLAIM_MS, WAITER_LEASE_MS } from '../../store/waiter-timing.js';

/**
 * The lock scripts (`lock-acquire-script.ts`, `lock-hold-scripts.ts`, `lock-control-scripts.ts`, listed in
 * `lock-scripts.ts`) and the prelude they share. Scripts read the clock with `TIME` (Redis server time), never a
 * client's.
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

/** Helpers shared by the scripts: clock, purge of dead holders and waiters, expiry bookkeeping, wake-ups. */
export const LOCK_PRELUDE = `
local WAITER_LEASE_MS, CLAIM_MS = ${WAITER_LEASE_MS}, ${CLAIM_MS}

local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- The keys of one lock, in the order every per-lock script receives them (the slot's fence floor: ACQUIRE only).
-- The wake-up channel is the state key's name with ':ch' (a channel, not a key: it need not be in KEYS).
local function lockKeys(keys)
  return { state = keys[1], leases = keys[2], writers = keys[3], readers = keys[4], queue = keys[5],
    deadlines = keys[6], channel = keys[1] .. ':ch', fence = keys[7] }
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
