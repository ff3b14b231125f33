import { crossSlotVariant, luaScript } from './lua-script.js';
import { PERMIT_PRELUDE as PRELUDE } from './permit-prelude.js';

// The semaphore scripts off the acquire/release path: a waiter's withdrawal and the waiters' heartbeat, and the
// administrative force release and limit change. Key layout and helpers: `permit-prelude.ts`.

/**
 * A waiter gives up: drop its registration and pass on any wake-up it took. ARGV: 1 waiter id. Returns 1 if removed.
 */
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
 * Waiters' heartbeat (see KEEP_WAITING of `lock-control-scripts.ts`). KEYS: the 6 keys of each waiter's semaphore (one
 * slot per
 * call; PERMIT_KEEP_WAITING_CROSS_SLOT for several slots of one Cluster node). ARGV: waiter id and '1' (fair) or '0'
 * of each. Returns per waiter 0 (not registered any more: attempt now), 1 (renewed) or 2
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
 * PERMIT_KEEP_WAITING for a Redis Cluster node: the waiters of one process on semaphores of several slots that one
 * master serves, in one call. ARGV: the 6 key names of each waiter's semaphore, then its id and fair flag, in eights.
 * See `crossSlotVariant` and KEEP_WAITING_CROSS_SLOT in lock-control-scripts.ts.
 */
export const PERMIT_KEEP_WAITING_CROSS_SLOT = crossSlotVariant(
  PERMIT_KEEP_WAITING,
  `for i = 1, #ARGV / 2 do
  local k = 6 * (i - 1)
  local K = permitKeys({ KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], KEYS[k + 5], KEYS[k + 6] })
  local fair = ARGV[2 * i] == '1'
  local member = fair and ('w:' .. ARGV[2 * i - 1]) or ARGV[2 * i - 1]`,
  `for i = 1, #ARGV / 8 do
  local k = 8 * (i - 1)
  local K = permitKeys({ ARGV[k + 1], ARGV[k + 2], ARGV[k + 3], ARGV[k + 4], ARGV[k + 5], ARGV[k + 6] })
  local fair = ARGV[k + 8] == '1'
  local member = fair and ('w:' .. ARGV[k + 7]) or ARGV[k + 7]`,
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

/**
 * Read-only snapshot for `inspectPermits`, in INSPECT's reply shape (`permit-codec.ts` decodes it): {now, stateFields
 * (flat HGETALL), live leases (flat token/expiry), live waiters (fair and not), 0}. Only permits with a running lease
 * are listed: a holder record whose lease ran out (its leases set may be gone too, while a stored limit keeps the
 * state) is a permit that ran out, never the lock's single-holder form that INSPECT reads from the state's expiry.
 */
export const PERMIT_INSPECT = luaScript(
  'permit-inspect',
  `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local live = '(' .. now
return {
  now,
  redis.call('HGETALL', KEYS[1]),
  redis.call('ZRANGEBYSCORE', KEYS[2], live, '+inf', 'WITHSCORES'),
  redis.call('ZCOUNT', KEYS[3], live, '+inf') + redis.call('ZCOUNT', KEYS[6], live, '+inf'),
  0
}
`,
);
