import { LockConfigError } from '../errors/lock-config.error.js';
import { DEFAULT_LOCK_SETTINGS, resolveAcquireOptions } from '../locking/settings/engine-settings.js';
import { validateLockKey } from '../store/lock-key.js';
import { wrapMethod } from '../decorators/method-wrapper.js';
import { FIRE_KEY_SEPARATOR, ScheduledJob } from './scheduled-job.js';
import type { ScheduledLockOptions } from './scheduled-job.js';

export type { ScheduledLockOptions } from './scheduled-job.js';

/**
 * Runs a scheduled method (`@Cron`, `@Interval` or `@Timeout` of `@nestjs/schedule`, in either decorator order) once
 * per fire across every instance of the application, and never twice at once. Each `@Cron` fire has its own key,
 * `job:<name>@<tick>` (default name `Class.method`; the tick is the fire's time, so instances whose clocks differ agree
 * on it), tried once (`ifLocked: 'skip'`): the instance that gets it runs the job, the others skip that fire (a
 * `skipped` event, nothing logged above debug); the key stays taken at least `holdAtLeastMs`. The run itself holds
 * `job:<name>`, renewed by the watchdog: a job that outlives its lease or its interval is never run twice at once, and
 * the fires meanwhile are skipped (one warning each). `@Interval` and `@Timeout` (no fire time shared by the
 * instances) take `job:<name>` only, held at least `holdAtLeastMs`: at most one run per that window. When Redis cannot
 * be reached the job does not run (fail closed) and one warning per job says so, until it runs again. Resolves to
 * `undefined` when skipped. Needs `RedisLockModule`; `@nestjs/schedule` is only needed to schedule the method.
 *
 * @example
 * @Cron('0 * * * * *')
 * @ScheduledLock('reports.minutely-digest')
 * async sendDigest() { ... }
 */
export function ScheduledLock(name?: string, options: ScheduledLockOptions = {}): MethodDecorator {
  return (target, propertyKey, descriptor) => {
    wrapMethod('ScheduledLock', 'name', target, propertyKey, descriptor, (method, original) => {
      const key = validateLockKey(`job:${name ?? method}`);
      // The longest fire key (a tick's ISO time is 24 characters) must be a valid key too.
      validateLockKey(`${key}${FIRE_KEY_SEPARATOR}${new Date(0).toISOString()}`);
      try {
        // At start-up, not at the first fire: an option that could never work fails the application, not each fire.
        resolveAcquireOptions(
          DEFAULT_LOCK_SETTINGS,
          { holdAtLeastMs: options.holdAtLeastMs, leaseMs: options.leaseMs, autoExtend: options.autoExtend },
          key,
        );
      } catch (err) {
        if (!(err instanceof LockConfigError)) throw err;
        throw new LockConfigError(`@ScheduledLock on ${method}: ${err.message}`, err.option, key);
      }
      const job = new ScheduledJob(method, key, options, original);
      // `@Cron` written below this decorator put its metadata on the original: the wrapper keeps it.
      return (wrapper, self, args) => job.fire(wrapper, self, args);
    });
    return descriptor;
  };
}
