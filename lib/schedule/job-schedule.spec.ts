import { describe, expect, it } from '@jest/globals';
import { MAX_DEFAULT_FIRE_HOLD_MS, jobTiming } from './job-schedule.js';

const at = (iso: string) => Date.parse(iso);
const cron = (cronTime: unknown, zone: { timeZone?: string; utcOffset?: number } = {}) =>
  jobTiming({ kind: 'cron', cronTime, ...zone }, 30_000);

describe('jobTiming', () => {
  it('a cron fire is the latest tick not after the call, however late the call', async () => {
    const everySecond = await cron('*/1 * * * * *');
    const T = at('2026-11-25T08:40:07.000Z');
    expect(everySecond.fireOf?.(T)).toBe(T);
    expect(everySecond.fireOf?.(T + 5)).toBe(T);
    expect(everySecond.fireOf?.(T + 999)).toBe(T);
    expect(everySecond.fireOf?.(T - 1)).toBe(T - 1_000);
    const every5s = await cron('*/5 * * * * *');
    const F = at('2026-11-25T08:40:05.000Z');
    // An event loop blocked for 4.9 s still runs the fire it was armed for.
    expect(every5s.fireOf?.(F + 4_900)).toBe(F);
    // Irregular gaps: weekdays at 09:00; on Monday morning the latest fire is Friday's.
    const weekdays = await cron('0 0 9 * * 1-5', { timeZone: 'UTC' });
    expect(weekdays.fireOf?.(at('2026-11-30T08:00:00.000Z'))).toBe(at('2026-11-27T09:00:00.000Z'));
  });

  it("a cron fire is computed in the job's time zone or UTC offset (the cron package's own zone)", async () => {
    // 02:30 in India (UTC+05:30) is 21:00 UTC the day before.
    const tick = at('2026-06-01T21:00:00.000Z');
    for (const zone of [{ timeZone: 'Asia/Kolkata' }, { utcOffset: 330 }]) {
      const daily = await cron('0 30 2 * * *', zone);
      expect(daily.fireOf?.(tick + 10)).toBe(tick);
      expect(daily.fireOf?.(tick - 10)).toBe(tick - 86_400_000);
    }
  });

  it('default hold: the shortest gap between cron fires (at most 1 hour), 90 % of an interval, the lease for a timeout or a one-shot date', async () => {
    expect((await cron('*/1 * * * * *')).defaultHoldMs).toBe(1_000);
    expect((await cron('0 */5 * * * *')).defaultHoldMs).toBe(300_000);
    expect((await cron('0 0 3 * * *')).defaultHoldMs).toBe(MAX_DEFAULT_FIRE_HOLD_MS);
    expect((await jobTiming({ kind: 'interval', ms: 500 }, 30_000)).defaultHoldMs).toBe(450);
    expect(await jobTiming({ kind: 'timeout', ms: 500 }, 30_000)).toEqual({ defaultHoldMs: 30_000 });
    expect(await jobTiming({ kind: 'none' }, 30_000)).toEqual({ defaultHoldMs: 0 });
    const date = new Date('2030-01-01T00:00:00.000Z');
    const once = await cron(date);
    expect(once.defaultHoldMs).toBe(30_000);
    expect(once.fireOf?.(date.getTime() + 3)).toBe(date.getTime());
  });

  it('a cron expression the cron package cannot read: no fires, the lease as hold, and the reason', async () => {
    const bad = await cron('not a cron');
    expect(bad.fireOf).toBeUndefined();
    expect(bad.defaultHoldMs).toBe(30_000);
    expect(bad.problem).toEqual(expect.any(String));
  });
});
