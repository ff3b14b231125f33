import { CLAIM_MS, WAITER_LEASE_MS } from './lua-scripts.js';
import type { LuaScript } from './lua-scripts.js';
import { batched, luaScript, sharded } from './lua-scripts.js';

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
 * never bring such a permit back; INSPECT's reply is decoded by `permit-codec.ts`.
 *
 * The stored limit `n` is written by the first grant and applies to every later caller until the semaphore is idle
 * (no holder, no waiter) and its state is gone, or until SET_LIMIT changes it (which keeps it for a day, idle or not).
 */

const PRELUDE = `
local WAITER_LEASE_MS, CLAIM_MS = ${WAITER_LEASE_MS}, ${CLAIM_MS}
local KEEP_SET_LIMIT_MS = 86400000

local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function permitKeys(keys)
  return { state = keys[1], leases = keys[2], waiters = keys[3], queue = keys[5], deadlines = keys[6], channel = keys[1] .. ':ch' }
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

/**
 * Take a permit. ARGV: 1 token, 2 flags ('w', then 'f' = fair), 3 leaseMs, 4 seq, 5 holder info, 6 waiter id ('' =
 * do not register), 7 the caller's limit (applies when none is stored).
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
    local fence = nowus
    if tonumber(st[2] or '0') >= fence then fence = tonumber(st[2]) + 1 end
    local f = string.format('%.0f', fence)
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
  local fence = nowus
  local last = tonumber(st[2] or '0')
  if last >= fence then fence = last + 1 end
  local f = fmt(fence)
  redis.call('HSET', K.state, 'h:' .. token, '1|' .. seq .. '|' .. f .. '|' .. now .. '|' .. info, 'pf', f, 'n', limit)
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
  if fair or queued then
    if not queued then redis.call('ZADD', K.queue, nowus, member) end
    redis.call('ZADD', K.deadlines, expiry, member)
  else
    redis.call('ZADD', K.waiters, expiry, waiter)
  end
  redis.call('HSETNX', K.state, 'n', limit)
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

/** A waiter gives up: drop its registration and pass on any wake-up it took. ARGV: 1 waiter id. Returns 1 if removed. */
export const PERMIT_CANCEL_WAIT = luaScript(
  'permit-cancel-wait',
  PRELUDE +
    `
local K = permitKeys(KEYS)
local now = clock()
local removed = redis.call('ZREM', K.waiters, ARGV[1]) + redis.call('ZREM', K.queue, 'w:' .. ARGV[1])
redis.call('ZREM', K.deadlines, 'w:' .. ARGV[1])
purge(K, now)
wake(K, now)
settle(K, now)
return removed
`,
);

/**
 * Waiters' heartbeat (see KEEP_WAITING of `lua-scripts.ts`). KEYS: the 6 keys of each waiter's semaphore. ARGV: waiter
 * id and '1' (fair) or '0' of each. Returns per waiter 0 (not registered any more: attempt now), 1 (renewed) or 2
 * (woken, or within its claim window: attempt now).
 */
export const PERMIT_KEEP_WAITING = luaScript(
  'permit-keep-waiting',
  PRELUDE +
    `
local now = clock()
local out, woken = {}, {}
for i = 1, #ARGV / 2 do
  local k = 6 * (i - 1)
  local K = permitKeys({ KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], KEYS[k + 5], KEYS[k + 6] })
  local fair = ARGV[2 * i] == '1'
  local member = fair and ('w:' .. ARGV[2 * i - 1]) or ARGV[2 * i - 1]
  local set = fair and K.deadlines or K.waiters
  local s = redis.call('ZSCORE', set, member)
  if not s or tonumber(s) <= now then
    out[i] = 0
  elseif tonumber(s) <= now + CLAIM_MS then
    out[i] = 2
  else
    redis.call('ZADD', set, now + WAITER_LEASE_MS, member)
    if woken[K.state] == nil then
      purge(K, now)
      woken[K.state] = wake(K, now) or false
      settle(K, now)
    else
      redis.call('PEXPIREAT', set, now + WAITER_LEASE_MS, 'GT')
      redis.call('PEXPIREAT', K.state, now + WAITER_LEASE_MS, 'GT')
      if fair then redis.call('PEXPIREAT', K.queue, now + WAITER_LEASE_MS, 'GT') end
    end
    out[i] = 1
    for _, m in ipairs(woken[K.state] or {}) do
      if m == member then out[i] = 2 end
    end
  end
end
return out
`,
);

/**
 * The watchdog's renewal of many permits in one call. KEYS: state and leases of each permit, in pairs (one slot per
 * call on a Cluster). ARGV: token and leaseMs of each, in pairs. Returns one entry per permit: 1 renewed, 0 not held.
 * A permit whose lease ran out (or that Redis no longer has in its leases set, e.g. a leases set that expired early)
 * is not held: it is never renewed back into existence, and what is left of it (its record, a dead lease) is dropped.
 */
export const PERMIT_RENEW_MANY = luaScript(
  'permit-renew-many',
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
  else
    if s then redis.call('ZREM', leases, token) end
    redis.call('HDEL', state, 'h:' .. token)
    out[i] = 0
  end
end
return out
`,
);

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

/**
 * Administrative release: frees one holder's permit (ARGV[1] its token), the permits of one owner (ARGV[1] '', ARGV[2]
 * the owner id its holder record ends with, as `inspect` shows it), or every permit (both ''), whoever holds them, and
 * wakes waiters for them. Returns how many live permits were freed, or -1 when a lock lives under this key (nothing
 * changed).
 */
export const PERMIT_FORCE_RELEASE = luaScript(
  'permit-force-release',
  PRELUDE +
    `
local K = permitKeys(KEYS)
local st = redis.call('HMGET', K.state, 'n', 'f')
if not st[1] and st[2] then return -1 end
local now = clock()
local freed = 0
if ARGV[1] ~= '' then
  local s = redis.call('ZSCORE', K.leases, ARGV[1])
  if s and tonumber(s) > now then freed = 1 end
  redis.call('ZREM', K.leases, ARGV[1])
  redis.call('HDEL', K.state, 'h:' .. ARGV[1])
elseif (ARGV[2] or '') ~= '' then
  local tail = '|' .. ARGV[2]
  local all = redis.call('ZRANGE', K.leases, 0, -1, 'WITHSCORES')
  for i = 1, #all, 2 do
    local record = redis.call('HGET', K.state, 'h:' .. all[i])
    if record and string.sub(record, -#tail) == tail then
      if tonumber(all[i + 1]) > now then freed = freed + 1 end
      redis.call('ZREM', K.leases, all[i])
      redis.call('HDEL', K.state, 'h:' .. all[i])
    end
  end
else
  freed = redis.call('ZCOUNT', K.leases, '(' .. now, '+inf')
  local all = redis.call('ZRANGE', K.leases, 0, -1)
  for i = 1, #all do redis.call('HDEL', K.state, 'h:' .. all[i]) end
  redis.call('DEL', K.leases)
end
purge(K, now)
wake(K, now)
settle(K, now)
return freed
`,
);

/**
 * Change the stored limit on purpose. ARGV: 1 the new limit. Lowering keeps current holders (nobody is granted until
 * under the new limit); raising wakes waiters for the permits it adds. The state is kept at least a day, so the limit
 * outlives a quiet spell. Returns the limit before (0: none stored), or -1 when a lock lives under this key.
 */
export const PERMIT_SET_LIMIT = luaScript(
  'permit-set-limit',
  PRELUDE +
    `
local K = permitKeys(KEYS)
local st = redis.call('HMGET', K.state, 'n', 'f')
if not st[1] and st[2] then return -1 end
local now = clock()
redis.call('HSET', K.state, 'n', ARGV[1], 'k', now + KEEP_SET_LIMIT_MS)
purge(K, now)
wake(K, now)
settle(K, now)
return tonumber(st[1] or '0')
`,
);

/** `PERMIT_ACQUIRE` / `PERMIT_RELEASE` for several callers of one process at once (see `batched` in lua-scripts.ts). */
export const PERMIT_ACQUIRE_BATCH = batched(PERMIT_ACQUIRE);
export const PERMIT_RELEASE_BATCH = batched(PERMIT_RELEASE);

/** Every semaphore script (the SHA → source lookup adds their Cluster variants). */
export const PERMIT_SCRIPTS: readonly LuaScript[] = [PERMIT_ACQUIRE_BATCH, PERMIT_RELEASE_BATCH, 
  PERMIT_ACQUIRE,
  PERMIT_RELEASE,
  PERMIT_RENEW_MANY,
  PERMIT_EXTEND,
  PERMIT_CANCEL_WAIT,
  PERMIT_KEEP_WAITING,
  PERMIT_FORCE_RELEASE,
  PERMIT_SET_LIMIT,
];

/** The semaphore scripts and their Cluster (SPUBLISH) variants. */
export const PERMIT_SCRIPT_VARIANTS: readonly LuaScript[] = PERMIT_SCRIPTS.flatMap((s) => {
  const variant = sharded(s);
  return variant === s ? [s] : [s, variant];
});
