import { batched, crossSlot, luaScript as script } from './lua-script.js';
import { renewalLoop } from './renewal-loop.js';
import { LOCK_PRELUDE as PRELUDE } from './lock-prelude.js';

// The scripts on a held lock: release, renewal, extension.

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
  renewalLoop(`
out[i] = 0
if not s and redis.call('HEXISTS', state, 'h:' .. token) == 1 and redis.call('EXISTS', leases) == 0 then
  -- Single-holder form: the state's expiry is the lease, running since the state exists.
  redis.call('PEXPIREAT', state, now + lease, 'GT')
  out[i] = 1
end
`),
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

/** `RELEASE` for several locks of one process at once (see `batched`). */
export const RELEASE_BATCH = batched(RELEASE);

/**
 * RENEW_MANY for a Redis Cluster node: many holds of several slots that one master serves, in one call (Redis 7.0+).
 * See `crossSlot`.
 */
export const RENEW_MANY_CROSS_SLOT = crossSlot(RENEW_MANY);
