import { LockKeyError } from '../errors/lock-key.error.js';
import { fenceFloorKey } from './fence-floor.js';

/** Longest lock key accepted, in UTF-8 bytes. */
export const MAX_KEY_BYTES = 1024;

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

/** Throws `LockKeyError` unless `key` is a non-empty string of at most 1024 bytes that can form a hash tag. */
export function validateLockKey(key: unknown): string {
  if (typeof key !== 'string') {
    throw new LockKeyError(`invalid lock key: expected a string, got ${describe(key)}`, key);
  }
  if (key.length === 0) throw new LockKeyError('invalid lock key: the key is empty', key, key);
  if (!isWellFormed(key)) {
    // A lone surrogate has no UTF-8 form: Node would write U+FFFD, so distinct keys would share one lock.
    throw new LockKeyError(
      `invalid lock key ${JSON.stringify(key.slice(0, 40))}: not well-formed UTF-16 (a lone surrogate at index ${loneSurrogateAt(key)})`,
      key,
      key,
    );
  }
  const bytes = Buffer.byteLength(key, 'utf8');
  if (bytes > MAX_KEY_BYTES) {
    throw new LockKeyError(
      `invalid lock key "${key.slice(0, 40)}…": ${bytes} bytes, the limit is ${MAX_KEY_BYTES}`,
      key,
      key,
    );
  }
  if (key.startsWith('}')) {
    // `{}` would be an empty hash tag: Redis Cluster would then hash each full name separately.
    throw new LockKeyError(`invalid lock key "${key}": a key cannot start with '}'`, key, key);
  }
  return key;
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

/** Whether `s` has no lone surrogate (`String.prototype.isWellFormed`, Node 20+). */
function isWellFormed(s: string): boolean {
  return (s as string & { isWellFormed(): boolean }).isWellFormed();
}

function loneSurrogateAt(s: string): number {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
      else return i;
    } else if (c >= 0xdc00 && c <= 0xdfff) return i;
  }
  return -1;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v;
}
