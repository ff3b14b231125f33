/**
 * The watchdog's renewal loop, shared by locks (RENEW_MANY) and semaphores (PERMIT_RENEW_MANY).
 * KEYS: state and leases of each hold, in pairs. ARGV: token and leaseMs of each, in pairs. A lease still running is
 * moved to `now + leaseMs` if that is later (never shortened, so a renewal of 1 ms only asks whether the hold is
 * there), its keys' expiries with it, and the entry is 1. A hold whose lease is not running (ran out, or gone) runs
 * `notRunning`, which sets `out[i]` (0: not held) and may drop what is left of it; it sees `state`, `leases`, `token`,
 * `lease`, `s` (the lease's score, or nil) and `now`.
 * The loop's first two lines are what `crossSlot` (lua-script.ts) rewrites for its Cluster variant.
 */
export function renewalLoop(notRunning: string): string {
  return `
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
${notRunning.trim().replace(/^/gm, '    ')}
  end
end
return out
`;
}
