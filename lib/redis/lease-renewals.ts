import type { Cluster } from 'ioredis';
import type { LockKeys } from './key-layout.js';
import type { RenewCall } from './lock-store.js';
import { RENEW_MANY, RENEW_MANY_CROSS_SLOT } from './lua-scripts.js';
import type { LuaScript } from './lua-scripts.js';
import type { ScriptGateway } from './script-gateway.js';
import { slotOf } from './sharded-channels.js';

/** A renewal script (KEYS: state and leases of each hold; ARGV: token and leaseMs of each) and its `crossSlot` variant. */
export interface RenewScripts {
  readonly perSlot: LuaScript;
  readonly crossSlot: LuaScript;
}

/** The locks' renewals. */
export const LOCK_RENEWALS: RenewScripts = { perSlot: RENEW_MANY, crossSlot: RENEW_MANY_CROSS_SLOT };

/** Holds (or waiters) per script call: 2 keys each (6 for a waiter), so one call stays well under Redis's argument limits. */
export const RENEW_CHUNK = 200;

/**
 * The watchdog's renewals on Redis, for locks and permits alike (each kind names its scripts, `RenewScripts`): per
 * chunk of up to 200 holds, and on a Cluster the routing of each chunk to the master that serves its holds' slots.
 * Every call goes through the gateway's `write` (acknowledged by the replicas with `waitForReplicas`).
 */
export class LeaseRenewals {
  /** On a Cluster: whether renewals may batch the slots of one node (cleared once a node refuses the script flag). */
  private crossSlotRenewals = true;

  constructor(private readonly gateway: ScriptGateway) {}

  /**
   * `scripts.perSlot` (RENEW_MANY for locks). KEYS: state and leases of each hold; ARGV: token and leaseMs of each. One
   * script call per chunk of up to 200 holds; on a Cluster, per chunk of the holds one master serves (see
   * `renewOnCluster`).
   */
  async renew(holds: readonly RenewCall[], scripts: RenewScripts = LOCK_RENEWALS): Promise<boolean[]> {
    const all = holds.map((_, i) => i);
    if (this.gateway.client.isCluster) return this.renewOnCluster(holds, all, scripts);
    const replies = await Promise.all(chunks(all, RENEW_CHUNK).map((batch) => this.renewBatch(scripts.perSlot, holds, batch)));
    return replies.flat().map((r) => r === 1);
  }

  /**
   * Cluster renewals, grouped by the master that serves each hold's slot (the command client's slot map): one
   * `scripts.crossSlot` call (RENEW_MANY_CROSS_SLOT for locks) per chunk of a node's holds (Redis 7.0+:
   * `allow-cross-slot-keys`). A batch the node rejects because a slot of it moved (MOVED, a key no longer local, too
   * many redirections) or because it refuses the flag is sent again per slot, where the client follows redirections
   * itself; a server that refuses the flag is remembered and later ticks batch per slot at once. Other failures (node
   * down, timeout) reject the whole call, for the watchdog to retry. A hold is reported lost only on a script's own
   * answer, never because its batch was misrouted.
   */
  private async renewOnCluster(holds: readonly RenewCall[], all: readonly number[], scripts: RenewScripts): Promise<boolean[]> {
    const out = new Array<boolean>(holds.length).fill(false);
    const slots = all.map((i) => slotOf((holds[i].lock as LockKeys).state));
    const map = (this.gateway.client as Cluster).slots;
    const groups = new Map<string, number[]>();
    for (const i of all) {
      const slot = slots[i];
      const group = (this.crossSlotRenewals && map[slot]?.[0]) || `slot ${slot}`;
      const members = groups.get(group);
      if (members) members.push(i);
      else groups.set(group, [i]);
    }
    const settle = (batch: readonly number[], replies: number[]) => batch.forEach((i, j) => (out[i] = replies[j] === 1));
    const perSlot = async (batch: readonly number[]) => {
      const bySlot = new Map<number, number[]>();
      for (const i of batch) bySlot.set(slots[i], [...(bySlot.get(slots[i]) ?? []), i]);
      await Promise.all([...bySlot.values()].map(async (part) => settle(part, await this.renewBatch(scripts.perSlot, holds, part))));
    };
    await Promise.all(
      [...groups.values()].flatMap((group) =>
        chunks(group, RENEW_CHUNK).map(async (batch) => {
          if (batch.every((i) => slots[i] === slots[batch[0]])) return settle(batch, await this.renewBatch(scripts.perSlot, holds, batch));
          try {
            settle(batch, await this.renewBatch(scripts.crossSlot, holds, batch, true));
          } catch (err) {
            if (refusesCrossSlot(err)) this.crossSlotRenewals = false;
            // A failure that is not about routing (node down, timeout) is retried by the watchdog as a whole, not
            // multiplied into one call per slot.
            else if (!misrouted(err)) throw err;
            await perSlot(batch);
          }
        }),
      ),
    );
    return out;
  }

  /** One per-slot call (key names as KEYS), or a `crossSlot` one (the first state routes it, names in ARGV). */
  private async renewBatch(script: LuaScript, holds: readonly RenewCall[], batch: readonly number[], crossSlot = false): Promise<number[]> {
    const keys: string[] = crossSlot ? [(holds[batch[0]].lock as LockKeys).state] : [];
    const args: (string | number)[] = [];
    for (const i of batch) {
      const { lock, token, leaseMs } = holds[i];
      const names = lock as LockKeys;
      if (crossSlot) args.push(names.state, names.leases, token, leaseMs);
      else {
        keys.push(names.state, names.leases);
        args.push(token, leaseMs);
      }
    }
    return (await this.gateway.write(script, keys, args)) as number[];
  }
}

/** `items` grouped by `keyOf`, in first-seen order. */
export function groupBy<T, K>(items: readonly T[], keyOf: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}

/** `items` in runs of at most `size`. */
export function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Whether the server refuses a script that takes keys of several slots (Redis before 7.0, or a proxy). */
function refusesCrossSlot(err: unknown): boolean {
  const message = err instanceof Error ? err.message : String(err);
  return /CROSSSLOT|shebang|Unknown lua shebang|allow-cross-slot|Error compiling script/i.test(message);
}

/** Whether a cross-slot batch failed because a slot of it is not (or no longer) served by the node it reached. */
function misrouted(err: unknown): boolean {
  const message = err instanceof Error ? err.message : String(err);
  return /^(MOVED|ASK|TRYAGAIN) |non local key|Too many Cluster redirections|hash to the same slot/i.test(message);
}
