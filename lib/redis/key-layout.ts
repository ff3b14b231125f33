import { fenceFloorKey } from './fence-floor.js';

/**
 * The Redis names of one lock. All share the hash tag `{<key>}`, so every script touches a single Cluster slot:
 * - `state`   hash: `w` writer token, `f` last fencing token, `h:<token>` one field per holder;
 * - `leases`  sorted set: holder token -> lease expiry (Redis server time, ms);
 * - `writers` sorted set: waiting writer id -> registration expiry (writer preference, targeted wake-up);
 * - `readers` sorted set: waiting reader id -> registration expiry;
 * - `queue` sorted set: fair waiter `<w|r>:<id>` -> arrival time (µs), the FIFO order;
 * - `deadlines` sorted set: fair waiter -> registration expiry (a dead waiter drops out of the queue);
 * - `channel` pub/sub channel for wake-ups: `<state>:ch` (the scripts derive it from KEYS[1] the same way);
 * - `fence` string: the fence floor of the lock's hash slot, the largest token any key of the slot was granted
 *   (`fenceFloorKey`: `<prefix>fence:{<tag>}`, shared by the keys of one slot, never expiring, only rising).
 */
export interface LockKeys {
  readonly key: string;
  readonly state: string;
  readonly leases: string;
  readonly writers: string;
  readonly readers: string;
  readonly queue: string;
  readonly deadlines: string;
  readonly channel: string;
  readonly fence: string;
  /** The six keys every per-lock script takes, in order. */
  readonly all: readonly string[];
  /** The keys of an acquisition (ACQUIRE, PERMIT_ACQUIRE): `all`, then `fence`. */
  readonly granting: readonly string[];
}

/**
 * The Redis names for `key` under `prefix` (the key must be valid). `channelPrefix` is the `keyPrefix` of an ioredis
 * client the application passed: ioredis prepends it to the KEYS of every script call, so the scripts publish on
 * `<channelPrefix><state>:ch`, but it leaves channel names alone, so subscribers must add it themselves.
 */
export function lockKeys(prefix: string, key: string, channelPrefix = ''): LockKeys {
  const base = `${prefix}{${key}}`;
  const state = base;
  const leases = `${base}:leases`;
  const writers = `${base}:wq`;
  const readers = `${base}:rq`;
  const queue = `${base}:fq`;
  const deadlines = `${base}:fd`;
  const fence = fenceFloorKey(prefix, state, channelPrefix);
  return {
    key,
    state,
    leases,
    writers,
    readers,
    queue,
    deadlines,
    channel: `${channelPrefix}${base}:ch`,
    fence,
    all: [state, leases, writers, readers, queue, deadlines],
    granting: [state, leases, writers, readers, queue, deadlines, fence],
  };
}
