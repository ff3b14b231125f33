import { createHash } from 'node:crypto';

/**
 * A Lua script of the library: its source and SHA1. Each is a constant: user data only ever reaches Redis through
 * KEYS and ARGV. The scripts of each primitive live beside this file (`lock-*.ts`, `permit-*.ts`); the helpers here
 * make their Cluster and batch variants.
 */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
}

function script(name: string, source: string): LuaScript {
  return Object.freeze({ name, source, sha: createHash('sha1').update(source).digest('hex') });
}

/** A script of a primitive (the semaphore's, `permit-scripts.ts`), made as the lock scripts are. */
export const luaScript = script;

/**
 * The variant of a renewal script (RENEW_MANY, the semaphore's PERMIT_RENEW_MANY: state and leases in KEYS, token and
 * leaseMs in ARGV, in pairs) for many holds of several slots that one Cluster master serves, in one call (Redis 7.0+).
 * ARGV: state, leases, token and leaseMs of each hold, in fours. See `crossSlotVariant`.
 */
export function crossSlot(base: LuaScript): LuaScript {
  return crossSlotVariant(
    base,
    `for i = 1, #ARGV / 2 do
  local state, leases = KEYS[2 * i - 1], KEYS[2 * i]
  local token, lease = ARGV[2 * i - 1], tonumber(ARGV[2 * i])`,
    `for i = 1, #ARGV / 4 do
  local state, leases = ARGV[4 * i - 3], ARGV[4 * i - 2]
  local token, lease = ARGV[4 * i - 1], tonumber(ARGV[4 * i])`,
  );
}

/**
 * The variant of a script over many locks (`perKeys`: its loop over them, reading their names from KEYS) for many
 * locks of several slots that one Cluster master serves, in one call (Redis 7.0+), its loop replaced by `perArgs`,
 * which reads every name from ARGV. Redis routes and checks a command by its declared keys, which must share one
 * slot even for a script flagged `allow-cross-slot-keys`; the flag lets the script touch keys it did not declare, of
 * any slot the node serves. So KEYS[1] is the first item's state (it routes the call), and the key names go in ARGV
 * along with each item's arguments. A key of a slot the node does not serve (it moved) fails the call, possibly after
 * some items were done (the scripts so made are safe to run again for them: see `NodeBatches.route`). The shebang is
 * line 1 of the source, as Redis numbers it in `@user_script:<line>`; `perArgs` has as many lines as `perKeys`.
 */
export function crossSlotVariant(base: LuaScript, perKeys: string, perArgs: string): LuaScript {
  if (!base.source.includes(perKeys)) throw new Error(`${base.name} changed: update its cross-slot variant`);
  return script(`${base.name}-cross-slot`, `#!lua flags=allow-cross-slot-keys${base.source.replace(perKeys, perArgs)}`);
}

const SHARDED = new Map<LuaScript, LuaScript>();

/**
 * The variant of `base` for a Redis Cluster: wake-ups go out with SPUBLISH (sharded pub/sub, Redis 7.0+), so they stay
 * on the shard that serves the lock's slot instead of crossing the cluster bus to every node. Only the command name
 * changes: every `redis.call` stays on its own line.
 */
export function sharded(base: LuaScript): LuaScript {
  let variant = SHARDED.get(base);
  if (!variant) {
    const source = base.source.replace(/redis\.call\('PUBLISH', /g, "redis.call('SPUBLISH', ");
    variant = source === base.source ? base : script(`${base.name}-sharded`, source);
    SHARDED.set(base, variant);
  }
  return variant;
}

/**
 * Many calls of a per-lock script (`ACQUIRE`, `RELEASE`) in one script call, for callers of one process that ask in
 * the same tick: `base`'s very source runs once per item, as a local function of that item's KEYS and ARGV, so each
 * item behaves exactly as its own call would (items are applied in order; a failing item fails the call, leaving
 * the earlier items applied, as separate calls would have been).
 * KEYS: the `keysPerItem` keys of each item, in order. ARGV: 1 item count, then per item its argument count and arguments.
 * Returns the items' replies, in order.
 */
export function batched(base: LuaScript, keysPerItem = 6): LuaScript {
  const keys = Array.from({ length: keysPerItem }, (_, i) => `KEYS[k + ${i + 1}]`).join(', ');
  return script(
    `${base.name}-batch`,
    `
local function one(KEYS, ARGV)
${base.source}
end
local out, k, a = {}, 0, 2
for i = 1, tonumber(ARGV[1]) do
  local argc = tonumber(ARGV[a])
  local args = {}
  for j = 1, argc do args[j] = ARGV[a + j] end
  out[i] = one({ ${keys} }, args)
  k, a = k + ${keysPerItem}, a + 1 + argc
end
return out
`,
  );
}
