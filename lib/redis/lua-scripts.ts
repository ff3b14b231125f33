import { createHash } from 'node:crypto';

/**
 * Every Lua script of the library. Each is a constant: user data only ever reaches Redis through KEYS and ARGV.
 * Scripts read the clock with `TIME` (Redis server time), never a client's.
 *
 * Per lock (see `key-layout.ts`), with keys in this order for every script:
 *   KEYS[1] state hash   `w` writer token, `f` last fencing token, `h:<token>` = "count|seq|fence|since|info"
 *   KEYS[2] leases zset  holder token -> lease expiry (ms)
 *   KEYS[3] writers zset waiting writer id -> registration expiry (ms)
 *   KEYS[4] readers zset waiting reader id -> registration expiry (ms)
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

/** Helpers shared by the scripts: clock, purge of dead holders, expiry bookkeeping, wake-ups. */
const PRELUDE = `
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- Drops holders whose lease ran out. Returns true if any was dropped.
local function purge(state, leases, now)
  local dead = redis.call('ZRANGEBYSCORE', leases, '-inf', now)
  if #dead == 0 then return false end
  local writer = redis.call('HGET', state, 'w')
  for i = 1, #dead do
    redis.call('HDEL', state, 'h:' .. dead[i])
    if dead[i] == writer then redis.call('HDEL', state, 'w') end
  end
  redis.call('ZREMRANGEBYSCORE', leases, '-inf', now)
  return true
end

-- After holders changed: delete the lock when nobody holds it, else let both keys live as long as the
-- longest lease (so a lock whose every holder died frees itself).
local function settle(state, leases)
  local top = redis.call('ZRANGE', leases, -1, -1, 'WITHSCORES')
  if #top == 0 then
    redis.call('DEL', state, leases)
  else
    redis.call('PEXPIREAT', state, top[2])
    redis.call('PEXPIREAT', leases, top[2])
  end
end

-- Wakes whoever can now get in: one waiting writer if the lock is free, else every waiting reader when no
-- writer holds or waits. The message names the writer, so only that waiter retries.
local function wake(state, leases, writers, readers, channel, now)
  if redis.call('EXISTS', writers, readers) == 0 then return end
  if redis.call('HEXISTS', state, 'w') == 1 then return end
  local w = redis.call('ZRANGEBYSCORE', writers, '(' .. now, '+inf', 'LIMIT', 0, 1)
  if #w > 0 then
    if redis.call('ZCARD', leases) == 0 then redis.call('PUBLISH', channel, 'w:' .. w[1]) end
    return
  end
  if redis.call('ZCOUNT', readers, '(' .. now, '+inf') > 0 then redis.call('PUBLISH', channel, 'r') end
end

local function fmt(n) return string.format('%.0f', n) end
`;

/**
 * Acquire or re-enter a hold.
 * ARGV: 1 token, 2 mode ('w'|'r'), 3 leaseMs, 4 seq, 5 write token the caller holds on this key ('' if none:
 *       lets a write owner take a read lock), 6 waiter id ('' = do not register as a waiter), 7 holder info,
 *       8 wake-up channel, 9 '1' = re-entry only (fail with blockedBy 4 unless the token already holds the lock).
 * Returns {1, fencingToken, reentered (0|1)} when granted;
 *         {0, waitMs, blockedBy} when not: waitMs is how long until the blocking leases can have run out;
 *         blockedBy 1 = a writer holds it, 2 = readers hold it, 3 = a writer waits (writer preference),
 *         4 = re-entry asked but this token no longer holds the lock.
 */
export const ACQUIRE = script(
  'acquire',
  PRELUDE +
    `
local state, leases, writers, readers = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token, mode, lease, seq = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local field = 'h:' .. token
local now, nowus = clock()

local reentry = ARGV[9] == '1'

-- Fast path: nobody holds the lock.
if not reentry and redis.call('EXISTS', state) == 0 and (mode == 'w' or redis.call('ZCOUNT', writers, '(' .. now, '+inf') == 0) then
  local f = fmt(nowus)
  if mode == 'w' then
    redis.call('HSET', state, field, '1|' .. seq .. '|' .. f .. '|' .. now .. '|' .. ARGV[7], 'f', f, 'w', token)
  else
    redis.call('HSET', state, field, '1|' .. seq .. '|' .. f .. '|' .. now .. '|' .. ARGV[7], 'f', f)
  end
  redis.call('DEL', leases)
  redis.call('ZADD', leases, now + lease, token)
  redis.call('PEXPIREAT', state, now + lease)
  redis.call('PEXPIREAT', leases, now + lease)
  if ARGV[6] ~= '' then redis.call('ZREM', mode == 'w' and writers or readers, ARGV[6]) end
  return {1, nowus, 0}
end

local purged = purge(state, leases, now)
local held = redis.call('HGET', state, field)
if held then
  -- Re-entry by the owner context (or the client re-sending this very command after a reconnect).
  local count, hseq, hfence, rest = string.match(held, '^(%d+)|(%d+)|(%d+)|(.*)$')
  if tonumber(seq) <= tonumber(hseq) then return {1, tonumber(hfence), 1} end
  redis.call('HSET', state, field, (tonumber(count) + 1) .. '|' .. seq .. '|' .. hfence .. '|' .. rest)
  local e = now + lease
  if e > tonumber(redis.call('ZSCORE', leases, token)) then
    redis.call('ZADD', leases, e, token)
    redis.call('PEXPIREAT', state, e, 'GT')
    redis.call('PEXPIREAT', leases, e, 'GT')
  end
  return {1, tonumber(hfence), 1}
end
if reentry then
  if purged then
    settle(state, leases)
    wake(state, leases, writers, readers, ARGV[8], now)
  end
  return {0, 0, 4}
end

local writer = redis.call('HGET', state, 'w')
local blocked = 0
if mode == 'w' then
  if writer then blocked = 1 elseif redis.call('ZCARD', leases) > 0 then blocked = 2 end
elseif writer then
  if writer ~= ARGV[5] then blocked = 1 end
elseif ARGV[5] == '' and redis.call('ZCOUNT', writers, '(' .. now, '+inf') > 0 then
  blocked = 3
end

if blocked == 0 then
  local last = tonumber(redis.call('HGET', state, 'f') or '0')
  local fence = nowus
  if last >= fence then fence = last + 1 end
  local f = fmt(fence)
  redis.call('HSET', state, field, '1|' .. seq .. '|' .. f .. '|' .. now .. '|' .. ARGV[7], 'f', f)
  if mode == 'w' then redis.call('HSET', state, 'w', token) end
  redis.call('ZADD', leases, now + lease, token)
  settle(state, leases)
  if ARGV[6] ~= '' then redis.call('ZREM', mode == 'w' and writers or readers, ARGV[6]) end
  if purged then wake(state, leases, writers, readers, ARGV[8], now) end
  return {1, fence, 0}
end

if purged then
  settle(state, leases)
  wake(state, leases, writers, readers, ARGV[8], now)
end
local untilMs
if blocked == 1 then
  untilMs = tonumber(redis.call('ZSCORE', leases, writer) or now)
elseif blocked == 2 then
  untilMs = tonumber(redis.call('ZRANGE', leases, -1, -1, 'WITHSCORES')[2] or now)
else
  untilMs = tonumber(redis.call('ZRANGE', writers, -1, -1, 'WITHSCORES')[2] or now)
end
local waitMs = math.max(untilMs - now, 0)
if ARGV[6] ~= '' then
  local queue = mode == 'w' and writers or readers
  redis.call('ZADD', queue, now + waitMs + lease, ARGV[6])
  redis.call('PEXPIREAT', queue, redis.call('ZRANGE', queue, -1, -1, 'WITHSCORES')[2])
end
return {0, waitMs, blocked}
`,
);

/**
 * Release one level of a hold, or all of it.
 * ARGV: 1 token, 2 seq ('' = release every level: an external release by token), 3 wake-up channel.
 * Returns 2 when the hold ended, 1 when a level was released and the hold goes on (or this release was
 * already applied), 0 when the token holds nothing here.
 */
export const RELEASE = script(
  'release',
  PRELUDE +
    `
local state, leases, writers, readers = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local token, seq = ARGV[1], ARGV[2]
local field = 'h:' .. token
local now = clock()
local purged = purge(state, leases, now)
local held = redis.call('HGET', state, field)
if not held then
  if purged then
    settle(state, leases)
    wake(state, leases, writers, readers, ARGV[3], now)
  end
  return 0
end
if seq ~= '' then
  local count, hseq, rest = string.match(held, '^(%d+)|(%d+)|(.*)$')
  if tonumber(seq) <= tonumber(hseq) then return 1 end
  if tonumber(count) > 1 then
    redis.call('HSET', state, field, (tonumber(count) - 1) .. '|' .. seq .. '|' .. rest)
    return 1
  end
end
redis.call('HDEL', state, field)
if redis.call('HGET', state, 'w') == token then redis.call('HDEL', state, 'w') end
redis.call('ZREM', leases, token)
settle(state, leases)
wake(state, leases, writers, readers, ARGV[3], now)
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
  PRELUDE +
    `
local now = clock()
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
local state, leases = KEYS[1], KEYS[2]
local now = clock()
local s = redis.call('ZSCORE', leases, ARGV[1])
if not s or tonumber(s) <= now then return 0 end
redis.call('ZADD', leases, now + tonumber(ARGV[2]), ARGV[1])
settle(state, leases)
return 1
`,
);

/**
 * A waiter gives up (timeout, abort, shutdown): drop its registration and pass on any wake-up it may have taken.
 * ARGV: 1 waiter id, 2 mode ('w'|'r'), 3 wake-up channel. Returns 1 if an entry was removed.
 */
export const CANCEL_WAIT = script(
  'cancel-wait',
  PRELUDE +
    `
local state, leases, writers, readers = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now = clock()
local removed = redis.call('ZREM', ARGV[2] == 'w' and writers or readers, ARGV[1])
if purge(state, leases, now) then settle(state, leases) end
wake(state, leases, writers, readers, ARGV[3], now)
return removed
`,
);

/**
 * Administrative release: frees the lock whoever holds it. ARGV: 1 wake-up channel.
 * Returns 1 if the lock was held.
 */
export const FORCE_RELEASE = script(
  'force-release',
  PRELUDE +
    `
local state, leases, writers, readers = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now = clock()
local live = redis.call('ZCOUNT', leases, '(' .. now, '+inf')
redis.call('DEL', state, leases)
wake(state, leases, writers, readers, ARGV[1], now)
if live > 0 then return 1 end
return 0
`,
);

/**
 * Read-only snapshot for `inspect`. Returns {now, stateFields (flat HGETALL), leases (flat member/score),
 * live waiting writers, live waiting readers}.
 */
export const INSPECT = script(
  'inspect',
  PRELUDE +
    `
local state, leases, writers, readers = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now = clock()
return {
  now,
  redis.call('HGETALL', state),
  redis.call('ZRANGEBYSCORE', leases, '(' .. now, '+inf', 'WITHSCORES'),
  redis.call('ZCOUNT', writers, '(' .. now, '+inf'),
  redis.call('ZCOUNT', readers, '(' .. now, '+inf')
}
`,
);
