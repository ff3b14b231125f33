import type { LuaScript } from './lua-script.js';
import { batched, crossSlot, luaScript } from './lua-script.js';
import {
  PERMIT_CANCEL_WAIT,
  PERMIT_FORCE_RELEASE,
  PERMIT_INSPECT,
  PERMIT_KEEP_WAITING,
  PERMIT_KEEP_WAITING_CROSS_SLOT,
  PERMIT_SET_LIMIT,
} from './permit-control-scripts.js';
import { PERMIT_PRELUDE as PRELUDE } from './permit-prelude.js';
import { renewalLoop } from './renewal-loop.js';

// The semaphore scripts of holding a permit: acquire, release, renew, extend (key layout and helpers:
// `permit-prelude.ts`; withdrawal, heartbeat and administration: `permit-control-scripts.ts`).

/**
 * Take a permit. ARGV: 1 token, 2 flags ('w', then 'f' = fair), 3 leaseMs, 4 seq, 5 holder info, 6 waiter id ('' =
 * do not register), 7 the caller's limit (applies when none is stored). KEYS[7] is the fence floor of the semaphore's
 * hash slot (`fenceFloorKey`): every grant's token is past it and raises it.
 * Returns {1, fence, resent, limit} when granted ({1, …, 1, …}: this very command was applied before), or
 * {0, waitMs, blockedBy, limit} when not: blockedBy 1 = every permit is taken, 5 = fair waiters come first; waitMs is
 * how long until the first lease can have run out. {-1, 0, 0, 0}: a lock lives under this key.
 */
export const PERMIT_ACQUIRE = luaScript(
  'permit-acquire',
  `
local token, flags, lease, seq, info, waiter = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5], ARGV[6]
local st = redis.call('HMGET', KEYS[1], 'n', 'pf', 'f', 'h:' .. token)
if not st[1] and st[3] then return {-1, 0, 0, 0} end
local limit = tonumber(st[1] or ARGV[7])
if st[4] then return {1, tonumber(string.match(st[4], '^%d+|%d+|(%d+)|')), 1, limit} end
local t = redis.call('TIME')
local now, nowus = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), tonumber(t[1]) * 1000000 + tonumber(t[2])

-- Fast path, ahead of the prelude's helpers so that it does not pay for defining them: nobody waits (KEYS[3]
-- waiters, [5] fair queue), no permit's lease ran out (the first lease, KEYS[2], still runs), a permit is free.
if redis.call('EXISTS', KEYS[3], KEYS[5]) == 0 then
  local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  local used = first[2] and redis.call('ZCARD', KEYS[2]) or 0
  if (not first[2] or tonumber(first[2]) > now) and used < limit then
    -- Past the last token: the state's, and the slot's floor (KEYS[7]), read and raised by one SET … GET (set again
    -- in the rare case that the floor was not behind).
    local fence = math.max(nowus, tonumber(st[2] or '0') + 1)
    local f = string.format('%.0f', fence)
    local floor = tonumber(redis.call('SET', KEYS[7], f, 'GET') or '0')
    if floor >= fence then
      fence = floor + 1
      f = string.format('%.0f', fence)
      redis.call('SET', KEYS[7], f)
    end
    local e = now + lease
    redis.call('HSET', KEYS[1], 'h:' .. token, '1|' .. seq .. '|' .. f .. '|' .. now .. '|' .. info, 'pf', f, 'n', limit)
    redis.call('ZADD', KEYS[2], e, token)
    -- A key that existed has an expiry (the scripts always set one): only ever moved later. A new one gets it.
    if used > 0 then redis.call('PEXPIREAT', KEYS[2], e, 'GT') else redis.call('PEXPIREAT', KEYS[2], e) end
    if st[1] then redis.call('PEXPIREAT', KEYS[1], e, 'GT') else redis.call('PEXPIREAT', KEYS[1], e) end
    return {1, fence, 0, limit}
  end
end
` +
    PRELUDE +
    `
local fair = string.find(flags, 'f', 2, true) ~= nil
local K = permitKeys(KEYS)
purge(K, now)
local used = redis.call('ZCARD', K.leases)
local member = waiter ~= '' and ('w:' .. waiter) or ''
local queued, ahead = false, false
if redis.call('EXISTS', K.queue) == 1 then
  purgeWaiters(K, now)
  local rank = member ~= '' and redis.call('ZRANK', K.queue, member)
  if rank then
    queued = true
    ahead = rank >= limit - used
  else
    ahead = redis.call('ZCARD', K.queue) >= limit - used
  end
end
local blocked = 0
if used >= limit then blocked = 1 elseif ahead then blocked = 5 end

if blocked == 0 then
  local fence = math.max(nowus, tonumber(st[2] or '0') + 1, tonumber(redis.call('GET', K.fence) or '0') + 1)
  local f = fmt(fence)
  redis.call('HSET', K.state, 'h:' .. token, '1|' .. seq .. '|' .. f .. '|' .. now .. '|' .. info, 'pf', f, 'n', limit)
  redis.call('SET', K.fence, f)
  redis.call('ZADD', K.leases, now + lease, token)
  if waiter ~= '' then redis.call('ZREM', K.waiters, waiter) end
  if queued then
    redis.call('ZREM', K.queue, member)
    redis.call('ZREM', K.deadlines, member)
  end
  local e = now + lease
  if redis.call('PEXPIRETIME', K.leases) < e then redis.call('PEXPIREAT', K.leases, e) end
  if redis.call('PEXPIRETIME', K.state) < e then redis.call('PEXPIREAT', K.state, e) end
  -- Permits left free (a dead holder purged, a raised limit): the next waiters may take them.
  if used + 1 < limit then wake(K, now) end
  return {1, fence, 0, limit}
end

local untilMs = tonumber(redis.call('ZRANGE', K.leases, 0, 0, 'WITHSCORES')[2] or '0')
if untilMs <= now and blocked == 5 then
  local head = redis.call('ZRANGE', K.queue, 0, 0)[1]
  untilMs = tonumber((head and redis.call('ZSCORE', K.deadlines, head)) or now)
end
if member ~= '' then
  -- The registration's liveness lease: the waiter's heartbeat renews it while the waiter lives.
  local expiry = now + WAITER_LEASE_MS
  redis.call('HSETNX', K.state, 'n', limit)
  if fair or queued then
    if not queued then redis.call('ZADD', K.queue, nowus, member) end
    redis.call('ZADD', K.deadlines, expiry, member)
  else
    redis.call('ZADD', K.waiters, expiry, waiter)
  end
end
settle(K, now)
wake(K, now)
return {0, math.max(untilMs - now, 0), blocked, limit}
`,
);

/**
 * Give a permit back. ARGV: 1 token. Returns 2 when it was held (now released), 0 when the token holds nothing here
 * (a lease that ran out, or a release already applied).
 */
export const PERMIT_RELEASE = luaScript(
  'permit-release',
  `
if redis.call('HDEL', KEYS[1], 'h:' .. ARGV[1]) == 0 then return 0 end
redis.call('ZREM', KEYS[2], ARGV[1])
-- Fast path, ahead of the prelude's helpers: nobody waits (KEYS[3] waiters, [5] fair queue). The semaphore goes with
-- its last permit (unless SET_LIMIT keeps it); else the keys keep their expiry, at least the longest lease left.
if redis.call('EXISTS', KEYS[3], KEYS[5]) == 0 then
  if redis.call('ZCARD', KEYS[2]) == 0 and redis.call('HEXISTS', KEYS[1], 'k') == 0 then redis.call('DEL', KEYS[1], KEYS[2]) end
  return 2
end
` +
    PRELUDE +
    `
local K = permitKeys(KEYS)
local now = clock()
purge(K, now)
wake(K, now)
settle(K, now)
return 2
`,
);

/**
 * The watchdog's renewal of many permits in one call. KEYS: state and leases of each permit, in pairs (one slot per
 * call; PERMIT_RENEW_MANY_CROSS_SLOT for several slots of one Cluster node). ARGV: token and leaseMs of each, in
 * pairs. Returns one entry per permit: 1 renewed, 0 not held.
 * A permit whose lease ran out (or that Redis no longer has in its leases set, e.g. a leases set that expired early)
 * is not held: it is never renewed back into existence, and what is left of it (its record, a dead lease) is dropped.
 */
export const PERMIT_RENEW_MANY = luaScript(
  'permit-renew-many',
  renewalLoop(`
if s then redis.call('ZREM', leases, token) end
redis.call('HDEL', state, 'h:' .. token)
out[i] = 0
`),
);

/** PERMIT_RENEW_MANY for many permits of several slots one Cluster master serves, in one call (see `crossSlot`). */
export const PERMIT_RENEW_MANY_CROSS_SLOT = crossSlot(PERMIT_RENEW_MANY);

/**
 * Set a permit's lease to run `ms` from now (may shorten it). ARGV: 1 token, 2 ms. Returns 1, or 0 when the token holds
 * no running lease here (then, as in PERMIT_RENEW_MANY, what is left of it is dropped). The keys keep the expiry
 * `settle` gives them (a stored limit and waiters keep the state).
 */
export const PERMIT_EXTEND = luaScript(
  'permit-extend',
  PRELUDE +
    `
local K = permitKeys(KEYS)
local now = clock()
local s = redis.call('ZSCORE', K.leases, ARGV[1])
if not s or tonumber(s) <= now then
  if s then redis.call('ZREM', K.leases, ARGV[1]) end
  redis.call('HDEL', K.state, 'h:' .. ARGV[1])
  return 0
end
redis.call('ZADD', K.leases, now + tonumber(ARGV[2]), ARGV[1])
settle(K, now)
return 1
`,
);

/** `PERMIT_ACQUIRE` / `PERMIT_RELEASE` for several callers of one process at once (see `batched` in lua-script.ts). */
export const PERMIT_ACQUIRE_BATCH = batched(PERMIT_ACQUIRE, 7);
export const PERMIT_RELEASE_BATCH = batched(PERMIT_RELEASE);

/** Every semaphore script (the index, `index.ts`, adds the lock's and the Cluster variants). */
export const PERMIT_SCRIPTS: readonly LuaScript[] = [
  PERMIT_ACQUIRE_BATCH,
  PERMIT_RELEASE_BATCH,
  PERMIT_ACQUIRE,
  PERMIT_RELEASE,
  PERMIT_RENEW_MANY,
  PERMIT_RENEW_MANY_CROSS_SLOT,
  PERMIT_EXTEND,
  PERMIT_CANCEL_WAIT,
  PERMIT_KEEP_WAITING,
  PERMIT_KEEP_WAITING_CROSS_SLOT,
  PERMIT_FORCE_RELEASE,
  PERMIT_SET_LIMIT,
  PERMIT_INSPECT,
];
