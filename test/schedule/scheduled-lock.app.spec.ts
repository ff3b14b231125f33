// @ScheduledLock in one process, its method called directly (a call is the fire of the latest tick of its schedule):
// what it keeps in Redis, how it fails when Redis cannot be reached, and what it refuses at start-up.
import { performance } from 'node:perf_hooks';
import { Injectable, Logger } from '@nestjs/common';
import { Cron, Interval } from '@nestjs/schedule';
import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { LockConfigError } from '../../lib/errors/lock-config.error.js';
import { ScheduledLock } from '../../lib/schedule/scheduled-lock.decorator.js';
import { RedisProcess } from '../support/faults.js';
import { LockTestKit, deferred, keysUnder, until } from '../support/lock-test-kit.js';

/** Today's (or yesterday's) 03:00 UTC: the latest fire of `0 0 3 * * *` in UTC. */
function latestThreeAm(now = Date.now()): string {
  const day = new Date(now);
  const tick = Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate(), 3);
  return new Date(tick <= now ? tick : tick - 86_400_000).toISOString();
}

const gate = { current: deferred() };
let runs = 0;

@Injectable()
class NightlyJob {
  @Cron('0 0 3 * * *', { timeZone: 'UTC' })
  // A hold long enough that the checks made during it, a few round trips, end within it on a loaded machine (400 ms
  // did not: a full run at load 7 found the fire already released).
  @ScheduledLock('nightly', { holdAtLeastMs: 2_000 })
  async run(): Promise<string> {
    runs++;
    await gate.current.promise;
    return 'done';
  }
}

@Injectable()
class PollJob {
  @ScheduledLock('poll', { holdAtLeastMs: 0 })
  @Interval(60_000)
  async run(): Promise<string> {
    runs++;
    return 'polled';
  }
}

describe('@ScheduledLock in one process', () => {
  const kit = new LockTestKit();
  let server: RedisProcess | undefined;
  afterEach(async () => {
    gate.current.resolve();
    gate.current = deferred();
    runs = 0;
    jest.restoreAllMocks();
    try {
      await kit.closeAll();
    } finally {
      // After the kit has checked that nothing is left on it.
      await server?.dispose();
      server = undefined;
    }
  });

  it('a cron fire takes job:<name>@<tick> and the running lock job:<name>; when the run ends the fire stays taken (finished) for holdAtLeastMs and the running lock is free', async () => {
    const t = await kit.app({ providers: [NightlyJob] });
    const job = t.app.get(NightlyJob);
    const fireKey = `job:nightly@${latestThreeAm()}`;
    const running = job.run();
    await until(() => runs === 1, 2_000, 'the run to start');
    expect((await t.locks.inspect('job:nightly'))?.holders).toEqual([
      expect.objectContaining({ finished: false, holdCount: 1 }),
    ]);
    expect((await t.locks.inspect(fireKey))?.holders).toEqual([
      expect.objectContaining({ finished: false, holdCount: 1 }),
    ]);
    // The same fire again (another instance, or a second call) while it runs: skipped, not run.
    const skipped: string[] = [];
    t.locks.on('skipped', (e) => skipped.push(`${e.key} ${e.reason}`));
    expect(await job.run()).toBeUndefined();
    expect(skipped).toEqual([`${fireKey} busy`]);
    gate.current.resolve();
    expect(await running).toBe('done');
    expect(await t.locks.inspect('job:nightly')).toBeNull();
    expect((await t.locks.inspect(fireKey))?.holders).toEqual([
      expect.objectContaining({ finished: true, holdCount: 0 }),
    ]);
    expect(await job.run()).toBeUndefined();
    expect(runs).toBe(1);
    await until(async () => (await t.locks.inspect(fireKey)) === null, 4_000, 'the fire to be released after its hold');
  });

  it('Redis unreachable: the job does not run (skipped, unavailable), one warning per job until it runs again', async () => {
    const redis = (server = await RedisProcess.start());
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const t = await kit.app({ providers: [NightlyJob, PollJob] }, { redis: redis.url, commandTimeoutMs: 300 });
    const skipped: string[] = [];
    t.locks.on('skipped', (e) => skipped.push(`${e.key} ${e.reason}`));
    const nightly = t.app.get(NightlyJob);
    const poll = t.app.get(PollJob);
    gate.current.resolve();
    await redis.kill();
    for (let i = 0; i < 3; i++) {
      expect(await nightly.run()).toBeUndefined();
      expect(await poll.run()).toBeUndefined();
    }
    expect(runs).toBe(0);
    expect(skipped).toEqual(
      Array.from({ length: 3 }, () => [`job:nightly@${latestThreeAm()} unavailable`, 'job:poll unavailable']).flat(),
    );
    const warnings = () =>
      warn.mock.calls.map(([m]) => String(m)).filter((m) => m.includes('not run: Redis cannot be reached'));
    expect(warnings()).toEqual([
      expect.stringContaining('NightlyJob.run: not run'),
      expect.stringContaining('PollJob.run: not run'),
    ]);
    // Back (empty): the jobs run, and the next outage is reported again.
    await redis.restart();
    await until(async () => (await poll.run()) === 'polled', 5_000, 'the poll job to run once Redis is back');
    await redis.kill();
    expect(await poll.run()).toBeUndefined();
    expect(warnings()).toEqual([
      expect.stringContaining('NightlyJob.run'),
      expect.stringContaining('PollJob.run'),
      expect.stringContaining('PollJob.run'),
    ]);
    await redis.restart();
    // The attempt made while Redis was down may still reach it once it is back (ioredis replays what it queued, seen
    // ~300 ms after the restart; or the engine re-sends it, every 250 ms, to learn its outcome): the engine undoes
    // any grant, so nothing is left. (A close before that gives up on the undo after commandTimeoutMs and leaves the
    // grant to its lease.) So: once the app is connected again, no key of it for a second.
    await until(async () => (await t.locks.ping(300)).command, 5_000, 'the app to reconnect');
    const admin = kit.redis(redis.url);
    let emptySince: number | undefined;
    await until(
      async () => {
        const empty = (await keysUnder(admin, t.prefix)).length === 0;
        emptySince = empty ? (emptySince ?? performance.now()) : undefined;
        return emptySince !== undefined && performance.now() - emptySince > 1_000;
      },
      8_000,
      'a replayed attempt to be undone (no key for a second)',
    );
  });

  it('options that could never work fail at start-up, naming the method and the option', () => {
    const decorate = (options: object) => () => {
      class Job {
        @Cron('* * * * * *')
        @ScheduledLock('bad', options)
        run(): void {}
      }
      return Job;
    };
    for (const [options, option] of [
      [{ holdAtLeastMs: -1 }, 'holdAtLeastMs'],
      [{ holdAtLeastMs: 1.5 }, 'holdAtLeastMs'],
      [{ leaseMs: 10 }, 'leaseMs'],
      [{ autoExtend: 'yes' }, 'autoExtend'],
    ] as const) {
      let error: unknown;
      try {
        decorate(options)();
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(LockConfigError);
      expect(error).toMatchObject({
        option,
        message: expect.stringContaining(`@ScheduledLock on Job.run: invalid ${option}`),
      });
    }
  });
});
