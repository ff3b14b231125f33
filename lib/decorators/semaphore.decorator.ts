import { Observable } from 'rxjs';
import { LockConfigError } from '../errors/lock-config.error.js';
import { MAX_PERMIT_LIMIT } from '../locking/permits/permits.js';
import type { PermitOptions } from '../types/permit.types.js';
import { compileKeySpec } from './key-template.js';
import type { LockKeySpec } from './key-template.js';
import { wrapLockedMethod } from './lock-decorator.factory.js';

/** Options of `@Semaphore`: `PermitOptions` without `signal`. `limit` is required. */
export type SemaphoreOptions = Omit<PermitOptions, 'signal'>;

/**
 * Runs the method while holding one of the `limit` permits of semaphore `key`: at most `limit` calls at once across
 * every instance of the application. `key` is a template as for `@WriteLocked` (`'export:<tenantId>'`), one key. On
 * a controller the permit lasts until the response completes; elsewhere until the promise settles or the Observable
 * completes. A permit not granted within `waitTimeoutMs` rejects with `LockAcquireTimeoutError` (HTTP 409, or the
 * configured conflict status); Redis failing, `LockUnavailableError` (503). An invalid `limit` or an unknown template
 * parameter throws `LockConfigError` at start-up.
 *
 * @example
 * @Post(':id/export')
 * @Semaphore('export:<id>', { limit: 2, waitTimeoutMs: 5_000 })
 * export(@Param('id') id: string) { … }
 */
export function Semaphore(key: LockKeySpec, options: SemaphoreOptions): MethodDecorator {
  return (target, propertyKey, descriptor) =>
    wrapLockedMethod('Semaphore', target, propertyKey, descriptor, (method, names) => {
      const limit = (options as Partial<SemaphoreOptions> | undefined)?.limit;
      if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_PERMIT_LIMIT) {
        throw new LockConfigError(
          `@Semaphore on ${method}: invalid limit ${String(limit)}; expected an integer from 1 to ${MAX_PERMIT_LIMIT} (the number of holders allowed at once)`,
          'limit',
        );
      }
      if (Array.isArray(key) && key.length !== 1) {
        throw new LockConfigError(`@Semaphore on ${method}: a semaphore has one key, got ${key.length}`, 'key');
      }
      const { limit: _limit, ...rest } = options;
      return {
        method,
        mode: 'write',
        options: { ...rest, mode: 'write' },
        resolveKeys: compileKeySpec(key, names, method),
        returnsObservable: Reflect.getMetadata('design:returntype', target, propertyKey) === Observable,
        permitLimit: limit,
      };
    });
}
