import { LockConfigError } from '../errors/lock-config.error.js';
import type { LockMetricsOptions } from '../observability/lock-metrics.js';
import { DefaultLockHttpErrorMapper } from './http-error-mapper.js';
import type { LockHttpErrorMapper } from './http-error-mapper.js';
import type { OnLockLost, RedisLockModuleOptions } from './redis-lock-module-options.interface.js';

/** The Nest-only module options, defaults merged (the engine's own settings are resolved by `LockEngine`). */
export interface ModuleSettings {
  readonly onLockLost: OnLockLost;
  readonly conflictStatus: number;
  readonly httpErrorMapper: LockHttpErrorMapper;
  readonly metrics: false | LockMetricsOptions;
  /** The application set the `metrics` option (to `true` or options): it wants to hear when metrics cannot be on. */
  readonly metricsRequested: boolean;
}

/** Defaults of the Nest-only options; the engine's are `DEFAULT_LOCK_SETTINGS`. */
export const DEFAULT_MODULE_SETTINGS: {
  readonly onLockLost: OnLockLost;
  readonly conflictStatus: number;
  readonly metrics: boolean | LockMetricsOptions;
} = Object.freeze({ onLockLost: 'warn', conflictStatus: 409, metrics: true });

const ON_LOCK_LOST: readonly OnLockLost[] = ['warn', 'throw', 'ignore'];

/** Merges and validates the Nest-only options, once, at start-up; throws `LockConfigError` naming the option. */
export function resolveModuleSettings(options: RedisLockModuleOptions): ModuleSettings {
  const onLockLost = options.onLockLost ?? DEFAULT_MODULE_SETTINGS.onLockLost;
  if (!ON_LOCK_LOST.includes(onLockLost)) {
    throw new LockConfigError(
      `invalid onLockLost: ${String(onLockLost)}; expected 'warn', 'throw' or 'ignore'`,
      'onLockLost',
    );
  }
  const conflictStatus = options.conflictStatus ?? DEFAULT_MODULE_SETTINGS.conflictStatus;
  if (!Number.isInteger(conflictStatus) || conflictStatus < 400 || conflictStatus > 599) {
    throw new LockConfigError(
      `invalid conflictStatus: ${String(conflictStatus)}; expected an HTTP error status from 400 to 599`,
      'conflictStatus',
    );
  }
  const httpErrorMapper = options.httpErrorMapper ?? new DefaultLockHttpErrorMapper(conflictStatus);
  if (typeof (httpErrorMapper as Partial<LockHttpErrorMapper>).map !== 'function') {
    throw new LockConfigError(
      'invalid httpErrorMapper: expected an object with a map(error, context) method',
      'httpErrorMapper',
    );
  }
  const metrics = options.metrics ?? DEFAULT_MODULE_SETTINGS.metrics;
  if (typeof metrics !== 'boolean' && (metrics === null || typeof metrics !== 'object')) {
    throw new LockConfigError(
      `invalid metrics: ${String(metrics)}; expected true, false or { meter, keyAttribute }`,
      'metrics',
    );
  }
  return Object.freeze({
    onLockLost,
    conflictStatus,
    httpErrorMapper,
    metrics: metrics === true ? {} : metrics,
    metricsRequested: options.metrics !== undefined && options.metrics !== false,
  });
}
