import type { RedisDriver } from './driver/redis-driver.js';
import type { LuaScript } from './scripts/lua-script.js';
import type { ScriptRunner } from './script-batcher.js';
import { slotOf } from './driver/slot.js';
import { errorText } from '../common/error-text.js';

/**
 * Items per script call: 6 key names and 3 arguments at most each, so one call stays well under Redis's argument
 * limits.
 */
export const BATCH_CHUNK = 200;

/**
 * A script over many locks of one process (items of type `T`: holds to renew, waiters to keep registered), and how
 * an item goes into it. `perSlot` takes the items' key names as KEYS and their `args` as ARGV, item after item;
 * `crossSlot` (see `crossSlotVariant` in scripts/lua-script.ts), for items of several slots that one Cluster master
 * serves,
 * takes in ARGV each item's key names followed by its `args`, and KEYS[1] the first item's state key, which routes the
 * call.
 */
export interface BatchScripts<T> {
  readonly perSlot: LuaScript;
  readonly crossSlot: LuaScript;
  /** The key names of the item's lock the script reads, its state first. */
  readonly keys: (item: T) => readonly string[];
  readonly args: (item: T) => readonly (string | number)[];
}

/**
 * Sends the items `batch` (indexes into the caller's list) in one script call and resolves with one reply per item,
 * in order: the per-slot script when `crossSlot` is false (the items share one slot, or the server is not a Cluster),
 * else the cross-slot one.
 */
type SendBatch = (batch: readonly number[], crossSlot: boolean) => Promise<readonly unknown[]>;

/**
 * The routing of the scripts that take many locks of one process at once (the watchdog's renewals, the waiters'
 * heartbeat): per chunk of up to 200 items, and on a Cluster per chunk of the items one master serves, in one
 * cross-slot call (Redis 7.0+: `allow-cross-slot-keys`). One per store's connections: a server that refuses the
 * cross-slot flag is remembered for every kind of batch.
 */
export class NodeBatches {
  /** On a Cluster: whether batches may span the slots of one node (cleared once a node refuses the script flag). */
  private crossSlotAllowed = true;

  constructor(private readonly driver: RedisDriver) {}

  /**
   * `scripts` over `items`, each call sent by `run` (the gateway's `run`, or its `write` for a script whose writes
   * must reach the replicas); resolves with every item's reply, in order. Routing: see `route`.
   */
  call<T>(items: readonly T[], scripts: BatchScripts<T>, run: ScriptRunner): Promise<unknown[]> {
    return this.route(
      items.length,
      (i) => slotOf(scripts.keys(items[i])[0]),
      async (batch, crossSlot) => {
        const keys: string[] = crossSlot ? [scripts.keys(items[batch[0]])[0]] : [];
        const args: (string | number)[] = [];
        // ioredis adds the `keyPrefix` of a client the application passed to KEYS only: the names in ARGV get it here.
        const prefix = this.driver.keyPrefix;
        for (const i of batch) {
          if (crossSlot) for (const name of scripts.keys(items[i])) args.push(prefix + name);
          else keys.push(...scripts.keys(items[i]));
          args.push(...scripts.args(items[i]));
        }
        return (await run(crossSlot ? scripts.crossSlot : scripts.perSlot, keys, args)) as unknown[];
      },
    );
  }

  /**
   * Items `0 .. count - 1` in script calls, `send` making each; resolves with every item's reply. Standalone (or
   * Sentinel): one call per chunk of up to 200 items. On a Cluster, grouped by the master that serves each item's
   * slot (`slotOf`, the command client's slot map): one cross-slot call per chunk of a node's items (a per-slot one
   * when the chunk has one slot). A batch the node rejects because a slot of it moved (MOVED, ASK, TRYAGAIN, a key no
   * longer local, redirections that ended on one of these) or because it refuses the flag is sent again per slot,
   * where the client follows redirections itself: the scripts are safe to run again for the items the rejected call
   * already went through (a renewal or a heartbeat renews again; a wake-up already sent is not sent twice). A server
   * that refuses the flag is remembered and later batches go per slot at once. Other failures (a node down, a
   * timeout) reject the whole call, for the caller to retry on its next round, and are not multiplied into one call
   * per slot.
   */
  private async route(count: number, slotOf: (i: number) => number, send: SendBatch): Promise<unknown[]> {
    const all = Array.from({ length: count }, (_, i) => i);
    const out = new Array<unknown>(count);
    const settle = (batch: readonly number[], replies: readonly unknown[]) =>
      batch.forEach((i, j) => (out[i] = replies[j]));
    if (!this.driver.cluster) {
      await Promise.all(chunks(all, BATCH_CHUNK).map(async (batch) => settle(batch, await send(batch, false))));
      return out;
    }
    const slots = all.map(slotOf);
    const groups = groupBy(
      all,
      (i) => (this.crossSlotAllowed && this.driver.masterOfSlot(slots[i])) || `slot ${slots[i]}`,
    );
    const perSlot = (batch: readonly number[]) =>
      Promise.all(
        [...groupBy(batch, (i) => slots[i]).values()].map(async (part) => settle(part, await send(part, false))),
      );
    await Promise.all(
      [...groups.values()].flatMap((group) =>
        chunks(group, BATCH_CHUNK).map(async (batch) => {
          if (batch.every((i) => slots[i] === slots[batch[0]])) return settle(batch, await send(batch, false));
          try {
            settle(batch, await send(batch, true));
          } catch (err) {
            if (refusesCrossSlot(err)) this.crossSlotAllowed = false;
            else if (!misrouted(err)) throw err;
            await perSlot(batch);
          }
        }),
      ),
    );
    return out;
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
export function refusesCrossSlot(err: unknown): boolean {
  return /CROSSSLOT|shebang|Unknown lua shebang|allow-cross-slot|Error compiling script/i.test(errorText(err));
}

/**
 * Whether a cross-slot batch failed because a slot of it is not (or no longer) served by the node it reached: a
 * redirection, a key the script found not local, keys of a slot being migrated (newer Redis versions word it
 * 'undeclared keys
 * were accessed during rehashing of the slot'; per slot, only that slot's call meets TRYAGAIN), or ioredis giving up
 * after redirections whose last was one. Not
 * when ioredis gave up on a connection that stayed closed (`Too many Cluster redirections. Last error: Error:
 * Connection is closed.`): the node is down, and one call per slot would only fail the same way, each after its own
 * round of retries.
 */
export function misrouted(err: unknown): boolean {
  const message = errorText(err);
  if (/^Too many Cluster redirections/i.test(message))
    return /Last error: (?:\w*Error: )?(?:MOVED|ASK|TRYAGAIN) /.test(message);
  return /^(MOVED|ASK|TRYAGAIN) |non local key|hash to the same slot|during rehashing of the slot/i.test(message);
}
