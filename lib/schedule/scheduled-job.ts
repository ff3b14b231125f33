import type { LockEngine } from '../locking/engine/lock-engine.js';
import { LockRegistry } from '../nest/lock-registry.js';
import type { LockRuntime } from '../nest/lock-registry.js';
import type { AcquireOptions } from '../types/lock.types.js';
import { jobScheduleOf, jobTiming } from './job-schedule.js';
import type { JobTiming } from './job-schedule.js';

/** Options of `@ScheduledLock`. */
export interface ScheduledLockOptions extends Pick<AcquireOptions, 'leaseMs' | 'autoExtend'> {
  /**
   * How long a fire stays taken at least, from when an instance took it (Redis's clock), even when the run finished
   * sooner or its process died: an instance whose clock is behind, or whose timer fires late, still finds the fire
   * taken. Make it more than the clock skew between instances. `@Cron`: no upper bound (each fire has its own key);
   * default: the shortest gap between the job's fires, at most 1 hour. `@Interval` / `@Timeout` (no fire time shared
   * by the instances: the job runs at most once per this window): default 90 % of the interval; the lease for an
   * `@Timeout`; `0` for a method without a schedule. In milliseconds.
   */
  readonly holdAtLeastMs?: number;
}

/** Separates a cron job's name from its fire time in a fire's key: `job:<name>@<ISO time of the tick>`. */
export const FIRE_KEY_SEPARATOR = '@';

type AnyMethod = (...args: unknown[]) => unknown;
type Outcome = 'ran' | 'taken' | 'still-running' | 'unavailable';

/**
 * One decorated job. A cron fire first takes the fire's key (`job:<name>@<tick>`, held at least `holdAtLeastMs`, never
 * deleted before then: the losers of that fire skip it), then the job's running lock (`job:<name>`, released when the
 * run ends: two runs never overlap, whichever fires they belong to). Jobs without a fire time shared by the
 * instances (`@Interval`, `@Timeout`, a call by hand) take the running lock only, held at least `holdAtLeastMs`.
 */
export class ScheduledJob {
  private timing: Promise<JobTiming> | undefined;
  private running: { readonly since: number } | undefined;
  private warnedUnavailable = false;
  private warnedProblem = false;

  constructor(
    private readonly method: string,
    private readonly key: string,
    private readonly options: ScheduledLockOptions,
    private readonly original: AnyMethod,
  ) {}

  async fire(wrapper: AnyMethod, self: unknown, args: unknown[]): Promise<unknown> {
    // Read before anything waits: the fire this call belongs to is decided by when the scheduler called it.
    const calledAt = Date.now();
    const runtime = LockRegistry.get(this.method);
    const { engine } = runtime;
    const timing = await (this.timing ??= jobTiming(jobScheduleOf(wrapper), engine.settings.leaseMs));
    if (timing.problem && !this.warnedProblem) {
      this.warnedProblem = true;
      runtime.warn(
        `${this.method}: its cron fires cannot be told apart (${timing.problem}); each run holds "${this.key}" at least holdAtLeastMs instead`,
      );
    }
    const holdAtLeastMs = this.options.holdAtLeastMs ?? timing.defaultHoldMs;
    const fire = timing.fireOf?.(calledAt);
    const fireKey = fire === undefined ? undefined : `${this.key}${FIRE_KEY_SEPARATOR}${new Date(fire).toISOString()}`;
    const call: { outcome: Outcome } = { outcome: 'taken' };
    const off = engine.on('skipped', (e) => {
      if (call.outcome === 'ran') return;
      if (e.reason === 'unavailable' && (e.key === this.key || e.key === fireKey)) call.outcome = 'unavailable';
      else if (e.key === this.key && fireKey !== undefined) call.outcome = 'still-running';
    });
    try {
      if (fireKey === undefined) {
        // No fire shared by the instances: the running lock alone, held at least holdAtLeastMs (for a cron job called
        // off its schedule, not at all: it runs unless a run is going).
        return await this.run(runtime, call, self, args, timing.fireOf ? 0 : holdAtLeastMs);
      }
      const options = {
        ifLocked: 'skip',
        holdAtLeastMs,
        leaseMs: this.options.leaseMs,
        autoExtend: this.options.autoExtend,
      } as const;
      return await engine.withLock(fireKey, () => this.run(runtime, call, self, args, 0), options);
    } finally {
      off();
      await this.report(runtime, call.outcome, fireKey);
    }
  }

  /** Runs the job under its running lock (one attempt), renewed while it runs; `undefined` when it was not run. */
  private run(
    runtime: LockRuntime,
    call: { outcome: Outcome },
    self: unknown,
    args: unknown[],
    holdAtLeastMs: number,
  ): Promise<unknown> {
    const { engine } = runtime;
    const options = {
      ifLocked: 'skip',
      holdAtLeastMs,
      leaseMs: this.options.leaseMs,
      autoExtend: this.options.autoExtend,
    } as const;
    return engine.withLock(
      this.key,
      async (lock) => {
        call.outcome = 'ran';
        this.running = { since: Date.now() };
        const lost = () =>
          runtime.warn(
            `${this.method}: the job lost its lock "${this.key}" while running (another instance may run it now): ${String(lock.signal.reason)}`,
          );
        lock.signal.addEventListener('abort', lost, { once: true });
        try {
          return await this.original.apply(self, args);
        } finally {
          lock.signal.removeEventListener('abort', lost);
          this.running = undefined;
        }
      },
      options,
    );
  }

  private async report(runtime: LockRuntime, outcome: Outcome, fireKey: string | undefined): Promise<void> {
    if (outcome === 'unavailable') {
      if (!this.warnedUnavailable) {
        runtime.warn(
          `${this.method}: not run: Redis cannot be reached to take "${fireKey ?? this.key}" (fail closed; no further warning until it runs again)`,
        );
      }
      this.warnedUnavailable = true;
      return;
    }
    if (outcome === 'ran') this.warnedUnavailable = false;
    else if (outcome === 'still-running' || (fireKey === undefined && this.running)) {
      // This instance took the fire (or, without fires, runs the job itself): one line per fire skipped this way.
      const which = fireKey ? `fire ${fireKey.slice(this.key.length + 1)}` : 'fire';
      runtime.warn(
        `${this.method}: ${which} of "${this.key}" skipped: the previous run is still going (${await this.whereRunning(runtime.engine)})`,
      );
    }
  }

  /** Who runs the job: this instance (for how long), or the holder `inspect` names. */
  private async whereRunning(engine: LockEngine): Promise<string> {
    if (this.running) return `on this instance, started ${Date.now() - this.running.since} ms ago`;
    const holder = (await engine.inspect(this.key).catch(() => null))?.holders[0];
    return holder ? `on ${holder.host} pid ${holder.pid}, since ${holder.since.toISOString()}` : 'elsewhere';
  }
}
