import type { LockKeys } from './key-layout.js';
import type { RenewCall } from '../store/lock-store.js';
import { RENEW_MANY, RENEW_MANY_CROSS_SLOT } from './scripts/lock-scripts.js';
import type { LuaScript } from './scripts/lua-script.js';
import type { BatchScripts, NodeBatches } from './node-batches.js';
import type { ScriptGateway } from './script-gateway.js';

/**
 * A renewal script (KEYS: state and leases of each hold; ARGV: token and leaseMs of each) and its cross-slot variant.
 */
export type RenewScripts = BatchScripts<RenewCall>;

/** The renewal scripts of one kind: `perSlot` (RENEW_MANY for locks) and its `crossSlot` variant (see `crossSlot`). */
export function renewScripts(perSlot: LuaScript, crossSlot: LuaScript): RenewScripts {
  return {
    perSlot,
    crossSlot,
    keys: (hold) => [(hold.lock as LockKeys).state, (hold.lock as LockKeys).leases],
    args: (hold) => [hold.token, hold.leaseMs],
  };
}

/** The locks' renewals. */
export const LOCK_RENEWALS: RenewScripts = renewScripts(RENEW_MANY, RENEW_MANY_CROSS_SLOT);

/**
 * The watchdog's renewals on Redis, for locks and permits alike (each kind names its scripts, `RenewScripts`): per
 * chunk of up to 200 holds, and on a Cluster per chunk of the holds one master serves (`NodeBatches`). Every call goes
 * through the gateway's `write` (acknowledged by the replicas with `waitForReplicas`).
 */
export class LeaseRenewals {
  constructor(
    private readonly gateway: ScriptGateway,
    private readonly batches: NodeBatches,
  ) {}

  /**
   * `scripts.perSlot` (RENEW_MANY for locks) per chunk of up to 200 holds; on a Cluster, one `scripts.crossSlot` call
   * (RENEW_MANY_CROSS_SLOT for locks) per chunk of the holds one master serves, sent again per slot when a slot of it
   * moved (see `NodeBatches`). A hold is reported lost only on a script's own answer, never because its batch was
   * misrouted. Replies: 1 renewed, 0 not held.
   */
  async renew(holds: readonly RenewCall[], scripts: RenewScripts = LOCK_RENEWALS): Promise<boolean[]> {
    const replies = await this.batches.call(holds, scripts, (script, keys, args) =>
      this.gateway.write(script, keys, args),
    );
    return replies.map((r) => r === 1);
  }
}
