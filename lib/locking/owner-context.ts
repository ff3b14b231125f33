import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes, randomFillSync } from 'node:crypto';
import type { LockMode } from './lock.types.js';
import type { Hold } from './hold.js';

/**
 * The owner of reentrant holds: one per outermost `withLock` / decorated call (the Node analogue of Redisson's
 * thread). Everything that runs inside that call's async context, however deeply nested, is the same owner.
 */
export class LockOwner {
  private static counter = 0;
  /** Readable, non-secret id: `<instance id>:<n>`. */
  readonly id: string;
  /** Secret tokens, 128 random bits each; one per mode so Redis can tell this owner's read and write holds apart. */
  readonly writeToken: string;
  readonly readToken: string;
  /** Current holds by lock key. */
  readonly holds = new Map<string, { write?: Hold; read?: Hold }>();
  /** The command in flight per `<mode>:<key>` (see `oneAtATime`). */
  private readonly pending = new Map<string, Promise<unknown>>();
  /** Last operation number sent for this owner's tokens (see `nextSeq`). */
  private seq = 0;

  constructor(instanceId: string) {
    this.id = `${instanceId}:${++LockOwner.counter}`;
    const bytes = randomHex(32);
    this.writeToken = bytes.slice(0, 32);
    this.readToken = bytes.slice(32);
  }

  /**
   * Increasing number of each acquire or release sent for this owner's tokens, whichever engine sends it: Redis
   * ignores a command whose number it has already seen for the token (a re-send after a reconnect).
   */
  nextSeq(): number {
    return ++this.seq;
  }

  /**
   * Runs `op` once no other acquisition or release of this owner on `slot` is in flight, and keeps it registered
   * while it runs. So parallel branches of one context re-enter instead of racing, and the commands of one token
   * on one key reach Redis in order (a command re-sent as EVAL after NOSCRIPT must not land after a later one,
   * whose higher seq would make Redis skip it).
   */
  async oneAtATime<T>(slot: string, op: () => Promise<T>): Promise<T> {
    for (let p = this.pending.get(slot); p; p = this.pending.get(slot)) await p.catch(() => undefined);
    const run = op();
    this.pending.set(slot, run);
    try {
      return await run;
    } finally {
      if (this.pending.get(slot) === run) this.pending.delete(slot);
    }
  }

  token(mode: LockMode): string {
    return mode === 'write' ? this.writeToken : this.readToken;
  }

  hold(key: string, mode: LockMode): Hold | undefined {
    const entry = this.holds.get(key);
    return mode === 'write' ? entry?.write : entry?.read;
  }

  setHold(key: string, mode: LockMode, hold: Hold | undefined): void {
    const entry = this.holds.get(key) ?? {};
    if (mode === 'write') entry.write = hold;
    else entry.read = hold;
    if (!entry.write && !entry.read) this.holds.delete(key);
    else this.holds.set(key, entry);
  }
}

/**
 * A place the Nest interceptor leaves in the context for one decorated handler: the decorated method fills it
 * with the handle it acquired, and the interceptor releases that handle when the response completes.
 */
export interface DeferredReleaseSlot {
  /** The decorated method this slot is for. */
  readonly target: unknown;
  used: boolean;
  handle: unknown;
}

/** What the async context carries: the owner, the innermost lock handle of the current scope, and a slot. */
export interface LockFrame {
  readonly owner: LockOwner;
  readonly handle: unknown;
  readonly slot?: DeferredReleaseSlot;
}

const STORAGE_KEY = Symbol.for('nest-redis-locks.owner-context');
type GlobalWithStorage = typeof globalThis & { [STORAGE_KEY]?: AsyncLocalStorage<LockFrame> };

/**
 * Kept on `globalThis` so that two copies of the library in one process (e.g. hoisted and nested
 * node_modules) still share one notion of "the current owner".
 */
export function ownerStorage(): AsyncLocalStorage<LockFrame> {
  const g = globalThis as GlobalWithStorage;
  return (g[STORAGE_KEY] ??= new AsyncLocalStorage<LockFrame>());
}

const POOL_SIZE = 4096;
const pool = Buffer.alloc(POOL_SIZE);
let poolOffset = POOL_SIZE;

/** `n` bytes from the system CSPRNG as hex, drawn from a pool refilled 4 KiB at a time (one call per 128 owners). */
function randomHex(n: number): string {
  if (poolOffset + n > POOL_SIZE) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const hex = pool.toString('hex', poolOffset, poolOffset + n);
  // Wipe what was handed out, so no later reader of the pool sees a token.
  pool.fill(0, poolOffset, poolOffset + n);
  poolOffset += n;
  return hex;
}

/** Random id of this process's engine instance, used in owner ids and waiter ids. */
export function newInstanceId(): string {
  return randomBytes(6).toString('hex');
}
