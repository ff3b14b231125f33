import type { LockEngineOptions } from '../locking/engine/engine-options.js';
import type { LockMetricsOptions } from '../observability/lock-metrics.js';
import type { LockHttpErrorMapper } from './http-error-mapper.js';

/** What a decorated method does when its lock was lost while it ran. */
export type OnLockLost =
  /** Log a warning naming the key and method; return the method's result (default). */
  | 'warn'
  /** Reject with the `LockLostError` instead of returning the result. */
  | 'throw'
  /** Do nothing (the `lost` event still fires). */
  | 'ignore';

/** Options of `RedisLockModule.forRoot` / `forRootAsync`. Every field but `redis` is optional. */
export interface RedisLockModuleOptions extends LockEngineOptions {
  /** Decorated methods whose lock was lost while they ran. Default `'warn'`. */
  readonly onLockLost?: OnLockLost;
  /** HTTP status a controller answers when a decorated handler's lock times out. Default `409` (Conflict). */
  readonly conflictStatus?: number;
  /**
   * How lock errors of decorated controller handlers become HTTP answers. Default: a
   * `DefaultLockHttpErrorMapper` with `conflictStatus` (409 timeout, 400 bad key, 503 shutting down).
   */
  readonly httpErrorMapper?: LockHttpErrorMapper;
  /**
   * OpenTelemetry metrics, recorded when `@opentelemetry/api` is installed: `true` (default) uses the global
   * meter provider, `false` turns them off, an object sets the meter or opts in to the `lock.key` attribute.
   */
  readonly metrics?: boolean | LockMetricsOptions;
}

/** Interface of a class for `forRootAsync({ useClass })`. */
export interface RedisLockOptionsFactory {
  createRedisLockOptions(): RedisLockModuleOptions | Promise<RedisLockModuleOptions>;
}
