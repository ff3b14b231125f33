import { crossSlotVariant, luaScript as script } from './lua-script.js';
import { LOCK_PRELUDE as PRELUDE } from './lock-prelude.js';

// The lock scripts around the holds: waiters' withdrawal and heartbeat, forced release, inspection.

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
