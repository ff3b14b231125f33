import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes, randomFillSync } from 'node:crypto';
import type { LockHandle, LockMode } from '../../types/lock.types.js';
import { settlesBy } from './deadlines.js';
import type { LaneWaitLimit } from './deadlines.js';
import type { Hold, HoldOwner } from './hold.js';

/**
 * The owner of reentrant holds: one per outermost `withLock` / decorated call (the Node analogue of Redisson's
 * thread). Everything that runs inside that call's async context, however deeply nested, is the same owner.
 */
export class LockOwner implements HoldOwner {
  private static counter = 0;
  /** Readable, non-secret id: `<instance id>:<n>`. */
  readonly id: string;
  /**
   * Secret tokens, 128 random bits each; one per mode so the store can tell this owner's read and write holds apart.
   */
  readonly writeToken: string;
  readonly readToken: string;
  /**
   * Current holds by owner key `<engine instance id>|<lock key>`. Owner contexts are shared by every engine in the
   * process, so holds are kept per engine: another engine's lock on the same key name is another lock.
   */
  private readonly holds = new Map<string, { write?: Hold; read?: Hold }>();
  /** The command in flight per lane (see `oneAtATime`). */
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
   * Increasing number of each acquire or release sent for this owner's tokens, whichever engine sends it: the store
   * ignores a command whose number it has already seen for the token (a re-send after a reconnect).
   */
  nextSeq(): number {
    return ++this.seq;
  }

  /**
   * Runs `op` once no other acquisition or release of this owner on `lane` is in flight, and keeps it registered
   * while it runs. So parallel branches of one context re-enter instead of racing, and the commands of one token
   * on one key reach the store in order (a command re-sent as EVAL after NOSCRIPT must not land after a later
   * one, whose higher seq would make the store skip it).
   */
  async oneAtATime<T>(lane: string, op: () => Promise<T>, waitLimit?: LaneWaitLimit): Promise<T> {
    for (let p = this.pending.get(lane); p; p = this.pending.get(lane)) {
      if (!waitLimit) await p.catch(() => undefined);
      else if (!(await settlesBy(p, waitLimit.until))) throw waitLimit.error();
    }
    const run = op();
    this.pending.set(lane, run);
    try {
      return await run;
    } finally {
      if (this.pending.get(lane) === run) this.pending.delete(lane);
    }
  }

  /**
   * Runs `work` on `lane` once the command on it now (if any) has settled, and keeps the lane busy until `work` has
   * settled: the background clean-up of a command whose outcome is unknown runs before any later command of this
   * owner with the same token on that lock (and takes its operation numbers in that order).
   */
  occupy(lane: string, work: () => Promise<unknown>): Promise<unknown> {
    const before = this.pending.get(lane);
    const run = (async () => {
      if (before) await before.catch(() => undefined);
      return work();
    })();
    const settled = run.catch(() => undefined);
    this.pending.set(lane, settled);
    void settled.then(() => {
      if (this.pending.get(lane) === settled) this.pending.delete(lane);
    });
    return run;
  }

  token(mode: LockMode): string {
    return mode === 'write' ? this.writeToken : this.readToken;
  }

  hold(ownerKey: string, mode: LockMode): Hold | undefined {
    const entry = this.holds.get(ownerKey);
    return mode === 'write' ? entry?.write : entry?.read;
  }

  keep(hold: Hold): void {
    this.set(hold.ownerKey, hold.mode, hold);
  }

  forget(hold: Hold): void {
    if (this.hold(hold.ownerKey, hold.mode) === hold) this.set(hold.ownerKey, hold.mode, undefined);
  }

  private set(ownerKey: string, mode: LockMode, hold: Hold | undefined): void {
    const entry = this.holds.get(ownerKey) ?? {};
    if (mode === 'write') entry.write = hold;
    else entry.read = hold;
    if (!entry.write && !entry.read) this.holds.delete(ownerKey);
    else this.holds.set(ownerKey, entry);
  }
}

/** What the async context carries: the owner and the innermost lock handle of the current scope. */
interface LockFrame {
  readonly owner: LockOwner;
  readonly handle: LockHandle | undefined;
}

const STORAGE_KEY = Symbol.for('nest-redis-locks.owner-context');
type GlobalWithStorage = typeof globalThis & { [STORAGE_KEY]?: AsyncLocalStorage<LockFrame> };

/**
 * Kept on `globalThis` so that two copies of the library in one process (hoisted and nested node_modules, or the
 * CommonJS and ESM builds) still share one notion of "the current owner".
 */
export function ownerStorage(): AsyncLocalStorage<LockFrame> {
  const g = globalThis as GlobalWithStorage;
  return (g[STORAGE_KEY] ??= new AsyncLocalStorage<LockFrame>());
}

/** The owner of the current async context, or a new one (a call outside any context is its own owner). */
export function currentOwner(instanceId: string): LockOwner {
  return ownerStorage().getStore()?.owner ?? new LockOwner(instanceId);
}

/** The innermost handle of the current async context (set by `withLock` and the decorators). */
export function currentHandle(): LockHandle | undefined {
  return ownerStorage().getStore()?.handle;
}

/** Runs `fn` as the current owner, starting a new owner context when there is none. */
export function runInOwnerScope<T>(instanceId: string, fn: () => T): T {
  if (ownerStorage().getStore()) return fn();
  return ownerStorage().run({ owner: new LockOwner(instanceId), handle: undefined }, fn);
}

/** Runs `fn` as a new owner of its own, whatever context the caller is in (each term of a campaign is one). */
export function runAsNewOwner<T>(instanceId: string, fn: () => T): T {
  return ownerStorage().run({ owner: new LockOwner(instanceId), handle: undefined }, fn);
}

/** Runs `fn` in the current owner context (or `owner`'s, outside any) with `handle` as the current handle. */
export function runWithHandle<T>(handle: LockHandle, owner: LockOwner, fn: () => T): T {
  return ownerStorage().run({ owner: ownerStorage().getStore()?.owner ?? owner, handle }, fn);
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

/** Random id of an engine instance, used in owner ids and waiter ids. */
export function newInstanceId(): string {
  return randomBytes(6).toString('hex');
}
