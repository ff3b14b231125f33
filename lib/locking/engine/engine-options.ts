import type { RedisConnectionInput } from '../../redis/connection.js';
import type { AcquireOptions } from '../../types/lock.types.js';
import type { LockLogger } from '../events/lock-events.js';
import type { LockEngineSettings } from '../settings/engine-settings.js';

/** Options of a `LockEngine`: the connection plus the engine settings (all optional but `redis`). */
export interface LockEngineOptions extends Partial<LockEngineSettings> {
  /**
   * A redis:// URL, ioredis `RedisOptions`, or an ioredis `Redis` / `Cluster` the application owns. Or an array of
   * 3 or more (odd) of them (no `Cluster`), each an independent master: quorum mode (see the README).
   */
  readonly redis: RedisConnectionInput | readonly RedisConnectionInput[];
  /** Where the engine writes warnings. Default: `console`, for warnings and errors only. */
  readonly logger?: LockLogger;
}

/** Per-call options of `withReadLock` / `withWriteLock` (the method fixes the mode). */
export type ModeFixedOptions = Omit<AcquireOptions, 'mode'>;
/** Options that skip a busy lock: `withLock` then resolves to `undefined` when the function was not run. */
export type SkipOptions = AcquireOptions & { readonly ifLocked: 'skip' };
/** Options that wait for a busy lock (the default): `withLock` resolves to what the function returns. */
export type WaitOptions = AcquireOptions & { readonly ifLocked?: 'wait' };

/** The logger of an engine made without one: `console`, for warnings and errors only. */
export const consoleLogger: LockLogger = {
  warn: (m) => console.warn(`[nest-redis-locks] ${m}`),
  error: (m) => console.error(`[nest-redis-locks] ${m}`),
};
