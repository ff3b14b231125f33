import { LockConfigError } from '../errors/lock-config.error.js';
import { LockRegistry } from '../nest/lock-registry.js';
import type { LockRuntime } from '../nest/lock-registry.js';
import { validateLockKey } from '../redis/key-layout.js';
import type { AcquireOptions } from '../types/lock.types.js';
import { defaultHoldAtLeastMs, jobScheduleOf } from './job-schedule.js';

/** Options of `@ScheduledLock`. */
export interface ScheduledLockOptions extends Pick<AcquireOptions, 'leaseMs' | 'autoExtend'> {
  /**
   * How long each run keeps the job taken at least, from when it started (Redis's clock), even when it finished
   * sooner or its process died. Make it more than the clock skew between instances and less than the interval.
   * Default: half the shortest gap between the job's cron fires; 90 % of an `@Interval`; the lease for an
   * `@Timeout`; `0` for a method without a schedule. In milliseconds.
   */
  readonly holdAtLeastMs?: number;
}

type AnyMethod = (...args: unknown[]) => unknown;

/**
 * Runs a scheduled method (`@Cron`, `@Interval` or `@Timeout` of `@nestjs/schedule`, in either decorator order) once
 * per fire across every instance of the application: the lock `job:<name>` (default name `Class.method`) is tried
 * once (`ifLocked: 'skip'`): the instance that gets it runs the job, the others skip that fire (a `skipped` event,
 * nothing logged above debug). The run holds the lock at least `holdAtLeastMs` (so an instance whose timer fires a
 * little later still finds the fire taken), renewed by the watchdog while it runs (a job that outlives its lease or
 * its interval is never run twice at once: later fires are skipped meanwhile). When Redis cannot be reached the job
 * does not run (fail closed) and one warning per job says so, until it runs again. Resolves to `undefined` when
 * skipped. Needs `RedisLockModule`; `@nestjs/schedule` is only needed to schedule the method.
 *
 * @example
 * @Cron('0 * * * * *')
 * @ScheduledLock('reports.hourly-digest', { holdAtLeastMs: 30_000 })
 * async sendDigest() { ... }
 */
export function ScheduledLock(name?: string, options: ScheduledLockOptions = {}): MethodDecorator {
  return (target, propertyKey, descriptor) => {
    const method = `${(target as { constructor: { name: string } }).constructor.name}.${String(propertyKey)}`;
    const original = descriptor.value as unknown;
    if (typeof original !== 'function') throw new LockConfigError(`@ScheduledLock on ${method}: not a method`, 'name');
    const key = validateLockKey(`job:${name ?? method}`);
    if (options.holdAtLeastMs !== undefined && (!Number.isInteger(options.holdAtLeastMs) || options.holdAtLeastMs < 0)) {
      throw new LockConfigError(
        `@ScheduledLock on ${method}: invalid holdAtLeastMs ${String(options.holdAtLeastMs)}; expected an integer number of milliseconds from 0`,
        'holdAtLeastMs',
        key,
      );
    }
    const job = new ScheduledJob(method, key, options, original as AnyMethod);
    const wrapper = function (this: unknown, ...args: unknown[]) {
      return job.fire(wrapper, this, args);
    };
    Object.defineProperty(wrapper, 'name', { value: (original as AnyMethod).name });
    Object.defineProperty(wrapper, 'length', { value: (original as AnyMethod).length });
    // `@Cron` written below this decorator put its metadata on the original: keep it (written above, it lands here).
    for (const metaKey of Reflect.getMetadataKeys(original)) Reflect.defineMetadata(metaKey, Reflect.getMetadata(metaKey, original), wrapper);
    (descriptor as PropertyDescriptor).value = wrapper;
    return descriptor;
  };
}

/** One decorated job: its lock, its options, and what it has said (one warning per outage). */
class ScheduledJob {
  private holdAtLeastMs: number | undefined;
  private running: { readonly since: number } | undefined;
  private warnedUnavailable = false;

  constructor(
    private readonly method: string,
    private readonly key: string,
    private readonly options: ScheduledLockOptions,
    private readonly original: AnyMethod,
  ) {}

  async fire(wrapper: AnyMethod, self: unknown, args: unknown[]): Promise<unknown> {
    const runtime = LockRegistry.get(this.method);
    const { engine } = runtime;
    this.holdAtLeastMs ??= this.options.holdAtLeastMs ?? (await defaultHoldAtLeastMs(jobScheduleOf(wrapper), engine.settings.leaseMs));
    let outcome: 'ran' | 'busy' | 'unavailable' = 'busy';
    const off = engine.on('skipped', (e) => {
      if (e.key === this.key && e.reason === 'unavailable') outcome = 'unavailable';
    });
    try {
      return await engine.withLock(
        this.key,
        async (lock) => {
          outcome = 'ran';
          this.running = { since: Date.now() };
          const lost = () => runtime.warn(`${this.method}: the job lost its lock "${this.key}" while running (another instance may run it now): ${String(lock.signal.reason)}`);
          lock.signal.addEventListener('abort', lost, { once: true });
          try {
            return await this.original.apply(self, args);
          } finally {
            lock.signal.removeEventListener('abort', lost);
            this.running = undefined;
          }
        },
        { ifLocked: 'skip', holdAtLeastMs: this.holdAtLeastMs, leaseMs: this.options.leaseMs, autoExtend: this.options.autoExtend },
      );
    } finally {
      off();
      this.report(runtime, outcome);
    }
  }

  private report(runtime: LockRuntime, outcome: 'ran' | 'busy' | 'unavailable'): void {
    if (outcome === 'unavailable') {
      if (!this.warnedUnavailable) {
        runtime.warn(`${this.method}: not run: Redis cannot be reached to take "${this.key}" (fail closed; no further warning until it runs again)`);
      }
      this.warnedUnavailable = true;
      return;
    }
    if (outcome === 'ran') this.warnedUnavailable = false;
    else if (this.running) {
      // This instance's own run is still going: the next fire is skipped (once per fire, one line).
      runtime.warn(`${this.method}: fire skipped, the previous run (started ${Date.now() - this.running.since} ms ago) is still going`);
    }
  }
}
