/**
 * What `@nestjs/schedule` recorded on a job method, read by its metadata keys (plain strings, so this needs nothing of
 * the package), and the default `holdAtLeastMs` that follows from it.
 */

/** `@Cron(cronTime, options)`: `{ ...options, cronTime }`. */
const CRON = 'SCHEDULE_CRON_OPTIONS';
/** `@Interval(ms)`: `{ timeout: ms }`. */
const INTERVAL = 'SCHEDULE_INTERVAL_OPTIONS';
/** `@Timeout(ms)`: `{ timeout: ms }`. */
const TIMEOUT = 'SCHEDULE_TIMEOUT_OPTIONS';

/** Share of a cron job's interval held at least by default: as much room for clock skew before the fire as after. */
export const CRON_HOLD_SHARE = 0.5;
/** Share of an `@Interval` held at least by default: close to the interval (the instances' timers share no phase). */
export const INTERVAL_HOLD_SHARE = 0.9;

/** How a job method is scheduled. */
export type JobSchedule =
  | { readonly kind: 'cron'; readonly cronTime: unknown; readonly timeZone?: string }
  | { readonly kind: 'interval' | 'timeout'; readonly ms: number }
  | { readonly kind: 'none' };

/** The schedule `@Cron` / `@Interval` / `@Timeout` recorded on `method` (in either decorator order, see the decorator). */
export function jobScheduleOf(method: object): JobSchedule {
  const cron = Reflect.getMetadata(CRON, method) as { cronTime?: unknown; timeZone?: string } | undefined;
  if (cron) return { kind: 'cron', cronTime: cron.cronTime, timeZone: cron.timeZone };
  const interval = Reflect.getMetadata(INTERVAL, method) as { timeout?: number } | undefined;
  if (typeof interval?.timeout === 'number') return { kind: 'interval', ms: interval.timeout };
  const timeout = Reflect.getMetadata(TIMEOUT, method) as { timeout?: number } | undefined;
  if (typeof timeout?.timeout === 'number') return { kind: 'timeout', ms: timeout.timeout };
  return { kind: 'none' };
}

/**
 * The default `holdAtLeastMs` of a job: half the shortest gap between its next cron fires, 90 % of an `@Interval`,
 * `fallbackMs` (the lease) for an `@Timeout`, a one-shot cron date, or a cron expression the `cron` package (a
 * dependency of `@nestjs/schedule`) cannot read; `0` for a method without a schedule.
 */
export async function defaultHoldAtLeastMs(schedule: JobSchedule, fallbackMs: number): Promise<number> {
  switch (schedule.kind) {
    case 'none':
      return 0;
    case 'interval':
      return Math.floor(schedule.ms * INTERVAL_HOLD_SHARE);
    case 'timeout':
      return fallbackMs;
    case 'cron': {
      const gap = await shortestCronGapMs(schedule.cronTime, schedule.timeZone);
      return gap === undefined ? fallbackMs : Math.floor(gap * CRON_HOLD_SHARE);
    }
  }
}

/** The shortest gap between the next 5 fires of a cron expression, in milliseconds; `undefined` when unknown. */
async function shortestCronGapMs(cronTime: unknown, timeZone: string | undefined): Promise<number | undefined> {
  if (typeof cronTime !== 'string') return undefined;
  try {
    const { CronTime } = (await import('cron')) as { CronTime: new (t: string, tz?: string) => { sendAt(n: number): { toMillis(): number }[] } };
    const fires = new CronTime(cronTime, timeZone).sendAt(5).map((d) => d.toMillis());
    let gap = Number.POSITIVE_INFINITY;
    for (let i = 1; i < fires.length; i++) gap = Math.min(gap, fires[i] - fires[i - 1]);
    return Number.isFinite(gap) && gap > 0 ? gap : undefined;
  } catch {
    return undefined;
  }
}
