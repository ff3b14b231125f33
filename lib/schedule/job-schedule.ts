import { loadCronTime } from './load-cron.js';
import type { CronTimeLike } from './load-cron.js';
import { errorText } from '../common/error-text.js';

/**
 * What `@nestjs/schedule` recorded on a job method, read by its metadata keys (plain strings, so this needs nothing of
 * the package), and what follows from it: the default `holdAtLeastMs` and which fire a call belongs to.
 */

/** `@Cron(cronTime, options)`: `{ ...options, cronTime }`. */
const CRON = 'SCHEDULE_CRON_OPTIONS';
/** `@Interval(ms)`: `{ timeout: ms }`. */
const INTERVAL = 'SCHEDULE_INTERVAL_OPTIONS';
/** `@Timeout(ms)`: `{ timeout: ms }`. */
const TIMEOUT = 'SCHEDULE_TIMEOUT_OPTIONS';

/** Share of an `@Interval` held at least by default: close to the interval (the instances' timers share no phase). */
export const INTERVAL_HOLD_SHARE = 0.9;
/**
 * The most a cron job's fires are held by default, in milliseconds (1 hour): a fire stays taken for the interval, or
 * this if the interval is longer. Far more than any clock skew; keeps a monthly job's fire key from living for weeks.
 */
export const MAX_DEFAULT_FIRE_HOLD_MS = 3_600_000;

/** How a job method is scheduled. */
export type JobSchedule =
  | { readonly kind: 'cron'; readonly cronTime: unknown; readonly timeZone?: string; readonly utcOffset?: number }
  | { readonly kind: 'interval' | 'timeout'; readonly ms: number }
  | { readonly kind: 'none' };

/**
 * The schedule `@Cron` / `@Interval` / `@Timeout` recorded on `method` (in either decorator order, see the decorator).
 */
export function jobScheduleOf(method: object): JobSchedule {
  const cron = Reflect.getMetadata(CRON, method) as
    { cronTime?: unknown; timeZone?: string; utcOffset?: number } | undefined;
  if (cron) return { kind: 'cron', cronTime: cron.cronTime, timeZone: cron.timeZone, utcOffset: cron.utcOffset };
  const interval = Reflect.getMetadata(INTERVAL, method) as { timeout?: number } | undefined;
  if (typeof interval?.timeout === 'number') return { kind: 'interval', ms: interval.timeout };
  const timeout = Reflect.getMetadata(TIMEOUT, method) as { timeout?: number } | undefined;
  if (typeof timeout?.timeout === 'number') return { kind: 'timeout', ms: timeout.timeout };
  return { kind: 'none' };
}

/** What a job's schedule says about its runs. */
export interface JobTiming {
  /** The default `holdAtLeastMs`, in milliseconds. */
  readonly defaultHoldMs: number;
  /**
   * The fire a call made at `now` (this instance's clock, ms since the epoch) belongs to, as the tick's time in ms
   * since
   * the epoch: the latest tick not after `now` (`undefined` if none). Absent when the schedule has no fire time shared
   * by the instances (`@Interval`, `@Timeout`, no schedule).
   */
  readonly fireOf?: (now: number) => number | undefined;
  /**
   * Why the fires of a cron job cannot be told apart (the `cron` package could not be loaded or read the expression).
   */
  readonly problem?: string;
}

/**
 * The timing of a job: for a cron expression, its fires (ticks computed by the `cron` package, a dependency of
 * `@nestjs/schedule`, loaded here lazily) and a default hold of the shortest gap between its next fires, at most
 * `MAX_DEFAULT_FIRE_HOLD_MS`; for a one-shot cron date, that date, held `fallbackMs`; 90 % of an `@Interval`;
 * `fallbackMs` (the lease) for an `@Timeout`; `0` for a method without a schedule.
 */
export async function jobTiming(schedule: JobSchedule, fallbackMs: number): Promise<JobTiming> {
  switch (schedule.kind) {
    case 'none':
      return { defaultHoldMs: 0 };
    case 'interval':
      return { defaultHoldMs: Math.floor(schedule.ms * INTERVAL_HOLD_SHARE) };
    case 'timeout':
      return { defaultHoldMs: fallbackMs };
    case 'cron':
      return cronTiming(schedule, fallbackMs);
  }
}

async function cronTiming(schedule: Extract<JobSchedule, { kind: 'cron' }>, fallbackMs: number): Promise<JobTiming> {
  const date = oneShotDate(schedule.cronTime);
  if (date !== undefined) return { defaultHoldMs: fallbackMs, fireOf: () => date };
  if (typeof schedule.cronTime !== 'string')
    return { defaultHoldMs: fallbackMs, problem: `unknown cronTime ${String(schedule.cronTime)}` };
  let cron: CronTimeLike;
  try {
    cron = await loadCronTime(schedule.cronTime, schedule.timeZone, schedule.utcOffset);
  } catch (err) {
    return { defaultHoldMs: fallbackMs, problem: errorText(err) };
  }
  const fires = cron.sendAt(5).map((d) => d.toMillis());
  let gap = Number.POSITIVE_INFINITY;
  for (let i = 1; i < fires.length; i++) gap = Math.min(gap, fires[i] - fires[i - 1]);
  if (!Number.isFinite(gap) || gap <= 0)
    return { defaultHoldMs: fallbackMs, problem: `no interval between the fires of "${schedule.cronTime}"` };
  const zone = zoneOf(cron);
  // A fire runs at or after its tick by this instance's clock (the `cron` package re-arms a timer that ends early),
  // however late its event loop lets it: the fire is the latest tick not after the call.
  const fireOf = (now: number): number | undefined => {
    for (let lookBackMs = gap; lookBackMs <= gap * 1_024; lookBackMs *= 2) {
      let tick = cron.getNextDateFrom(new Date(now - lookBackMs), zone).toMillis();
      if (tick > now) continue;
      for (let next = tick; next <= now; next = cron.getNextDateFrom(new Date(tick), zone).toMillis()) tick = next;
      return tick;
    }
    return undefined;
  };
  return { defaultHoldMs: Math.min(gap, MAX_DEFAULT_FIRE_HOLD_MS), fireOf };
}

/** The time of a one-shot cron (`@Cron(date)`: a `Date` or a Luxon `DateTime`), in ms; `undefined` otherwise. */
function oneShotDate(cronTime: unknown): number | undefined {
  if (cronTime instanceof Date) return cronTime.getTime();
  const toMillis = (cronTime as { toMillis?: unknown } | null)?.toMillis;
  return typeof toMillis === 'function' ? Number(toMillis.call(cronTime)) : undefined;
}

/** The zone the `cron` package computes ticks in: its fixed `utcOffset` (minutes), else its time zone. */
function zoneOf(cron: CronTimeLike): string | undefined {
  if (cron.utcOffset === undefined) return cron.timeZone;
  const sign = cron.utcOffset < 0 ? '-' : '+';
  const minutes = Math.abs(cron.utcOffset);
  return `UTC${sign}${String(Math.trunc(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
}
