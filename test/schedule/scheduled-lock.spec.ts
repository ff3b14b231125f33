import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import type { CronAppJob, CronAppJobReport, CronAppMessage, CronAppTask } from '../fixtures/cron-app.js';
import { keysUnder, redisUrl, sleep, uniquePrefix, until } from '../support/lock-test-kit.js';

const APP = fileURLToPath(new URL('../fixtures/cron-app.ts', import.meta.url));
const REGISTER_TS = fileURLToPath(new URL('../support/register-ts.mjs', import.meta.url));
/** Debian's libfaketime (package `faketime`, installed by .ci/run): shifts a process's wall clock. */
const LIBFAKETIME = [
  '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1',
].find(existsSync);

type MessageOf<T extends CronAppMessage['type']> = Extract<CronAppMessage, { type: T }>;

/** One application instance (test/fixtures/cron-app.ts), its wall clock shifted by `skewMs` with libfaketime. */
class Instance {
  private readonly inbox: CronAppMessage[] = [];
  readonly child: ChildProcess;

  constructor(task: CronAppTask, skewMs = 0) {
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.NODE_OPTIONS; // Jest's --experimental-vm-modules is not for the child
    if (skewMs !== 0) {
      if (!LIBFAKETIME) throw new Error('libfaketime is not installed: apt-get install faketime (.ci/run does)');
      // A fixed offset of the wall clock only (timers keep the real monotonic clock).
      Object.assign(env, {
        LD_PRELOAD: LIBFAKETIME,
        FAKETIME: `${skewMs >= 0 ? '+' : ''}${(skewMs / 1000).toFixed(3)}`,
        FAKETIME_DONT_FAKE_MONOTONIC: '1',
        FAKETIME_NO_CACHE: '1',
      });
    }
    this.child = fork(APP, [JSON.stringify(task)], {
      execArgv: ['--import', REGISTER_TS],
      env,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child.on('message', (m) => this.inbox.push(m as CronAppMessage));
    running.add(this);
  }

  async next<T extends CronAppMessage['type']>(type: T, timeoutMs = 30_000): Promise<MessageOf<T>> {
    await until(
      () => {
        const failure = this.inbox.find((m) => m.type === 'error');
        if (failure) throw new Error(`cron app ${this.child.pid} failed: ${(failure as MessageOf<'error'>).message}`);
        if (this.child.exitCode !== null || this.child.signalCode !== null)
          throw new Error(`cron app ${this.child.pid} exited`);
        return this.inbox.some((m) => m.type === type);
      },
      timeoutMs,
      `"${type}" from cron app ${this.child.pid}`,
    );
    return this.inbox.splice(
      this.inbox.findIndex((m) => m.type === type),
      1,
    )[0] as MessageOf<T>;
  }

  async report(): Promise<MessageOf<'report'>> {
    this.child.send({ type: 'report' });
    return this.next('report');
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const { child } = this;
    running.delete(this);
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }
}

const running = new Set<Instance>();
const clients: Redis[] = [];
afterEach(async () => {
  await Promise.all([...running].map((i) => i.stop('SIGKILL')));
  for (const c of clients.splice(0)) c.disconnect();
});

function redis(): Redis {
  const client = new Redis(redisUrl());
  clients.push(client);
  return client;
}

/** Starts one instance per skew, each with every job of `jobs`; resolves once every one is ready. */
async function fleet(
  prefix: string,
  jobs: readonly CronAppJob[],
  skews: readonly number[],
  leaseMs?: number,
): Promise<Instance[]> {
  const instances = skews.map((skew) => new Instance({ url: redisUrl(), prefix, jobs, leaseMs }, skew));
  await Promise.all(instances.map((i) => i.next('ready', 90_000)));
  return instances;
}

/** Each instance's report of job `id`. */
function reportsOf(reports: readonly MessageOf<'report'>[], id: string): CronAppJobReport[] {
  return reports.map((r) => r.jobs[id]);
}

const sum = (reports: readonly CronAppJobReport[], f: (r: CronAppJobReport) => number) =>
  reports.reduce((n, r) => n + f(r), 0);

/** Runs per fire second recorded for job `id`, for the fires from `from` to `to` (seconds, inclusive). */
async function runsPerFire(client: Redis, prefix: string, id: string, from: number, to: number): Promise<number[]> {
  const out: number[] = [];
  for (let s = from; s <= to; s++) out.push(Number((await client.get(`${prefix}${id}:runs:${s}`)) ?? 0));
  return out;
}

async function cleanUp(client: Redis, prefix: string): Promise<void> {
  const keys = await keysUnder(client, prefix);
  if (keys.length > 0) await client.del(...keys);
}

describe('@ScheduledLock with the real @nestjs/schedule over 3 processes', () => {
  it(
    '1 s cron jobs on 3 instances whose clocks differ by -300, 0 and +400 ms run exactly once per fire for 20 s: with the default hold, ' +
      'with holdAtLeastMs 900 (decorators in the other order), with holdAtLeastMs 2500 (longer than the interval: no fire is lost); ' +
      'without a hold they run fires twice (so the test can fail). @Interval: at most once per 90 % of the interval; @Timeout: once',
    async () => {
      const client = redis();
      const prefix = uniquePrefix('cron');
      const jobs: CronAppJob[] = [
        { id: 'default', kind: 'cron-above', holdAtLeastMs: null, runMs: 5 },
        { id: 'hold900', kind: 'cron-below', holdAtLeastMs: 900, runMs: 5 },
        { id: 'hold2500', kind: 'cron-above', holdAtLeastMs: 2_500, runMs: 5 },
        { id: 'bare', kind: 'cron-above', holdAtLeastMs: 0, runMs: 5 },
        { id: 'interval', kind: 'interval', holdAtLeastMs: null, runMs: 5 },
        { id: 'timeout', kind: 'timeout', holdAtLeastMs: null, runMs: 5 },
      ];
      const instances = await fleet(prefix, jobs, [-300, 0, 400]);
      const started = Date.now();
      // Whole fires only: from two seconds after every instance is up to two seconds before the end.
      const from = Math.ceil(started / 1000) + 2;
      await sleep(20_000);
      const to = Math.floor(Date.now() / 1000) - 2;
      const reports = await Promise.all(instances.map((i) => i.report()));
      const elapsed = Date.now() - started;
      await Promise.all(instances.map((i) => i.stop()));
      const perFire = async (id: string) => runsPerFire(client, prefix, id, from, to);

      expect((await perFire('default')).length).toBeGreaterThanOrEqual(14);
      for (const id of ['default', 'hold900', 'hold2500']) {
        const runs = await perFire(id);
        // The fires not run once, with how late each of their runs started (to tell a load spike from a bug).
        const notOnce = await Promise.all(
          runs
            .flatMap((n, i) => (n === 1 ? [] : [from + i]))
            .map(async (fire) => ({
              fire,
              runs: runs[fire - from],
              late: await client.lrange(`${prefix}${id}:late:${fire}`, 0, -1),
            })),
        );
        expect({ id, notOnce }).toEqual({ id, notOnce: [] });
      }
      // Without a hold, the instances whose clocks are behind find each fire free again: most fires run 2 or 3 times.
      const bare = await perFire('bare');
      expect(bare.filter((n) => n > 1).length).toBeGreaterThan(bare.length / 2);

      // The losers logged nothing above debug; each of their skipped fires was counted.
      for (const id of ['default', 'hold900', 'hold2500', 'interval', 'timeout'])
        expect({ id, logs: reportsOf(reports, id).flatMap((r) => r.logs) }).toEqual({ id, logs: [] });
      expect(reports.flatMap((r) => r.otherLogs)).toEqual([]);
      const hold2500 = reportsOf(reports, 'hold2500');
      expect(sum(hold2500, (r) => r.skipped.busy ?? 0)).toBeGreaterThanOrEqual(2 * (to - from + 1));

      // Three timers of 500 ms would run about 120 times in 20 s; held 450 ms each, at most one run per 450 ms.
      const intervalRuns = sum(reportsOf(reports, 'interval'), (r) => r.runs);
      expect(intervalRuns).toBeGreaterThanOrEqual(20);
      expect(intervalRuns).toBeLessThanOrEqual(Math.ceil(elapsed / 450) + 2);
      expect(Number(await client.get(`${prefix}interval:most`))).toBe(1);
      // Held the lease (30 s) by default: instances started within that window run it once.
      expect(sum(reportsOf(reports, 'timeout'), (r) => r.runs)).toBe(1);
      await cleanUp(client, prefix);
    },
    180_000,
  );

  it('a 2.5 s job on a 1 s schedule never runs twice at once; every fire either runs or is counted as skipped, and each fire skipped while it runs gets one line', async () => {
    const client = redis();
    const prefix = uniquePrefix('cron-long');
    const instances = await fleet(
      prefix,
      [{ id: 'long', kind: 'cron-below', holdAtLeastMs: null, runMs: 2_500 }],
      [0, 0, 0],
    );
    await sleep(8_000);
    const reports = reportsOf(await Promise.all(instances.map((i) => i.report())), 'long');
    await Promise.all(instances.map((i) => i.stop()));
    const runs = sum(reports, (r) => r.runs);
    const busy = sum(reports, (r) => r.skipped.busy ?? 0);
    expect(Number(await client.get(`${prefix}long:most`))).toBe(1);
    expect(runs).toBeGreaterThanOrEqual(2);
    // About 8 fires per instance: each fire either ran or was counted as skipped.
    expect(runs + busy).toBeGreaterThanOrEqual(18);
    // The instance that took a fire while the job ran says so, once for that fire, naming who runs it.
    const lines = reports.flatMap((r) => r.logs);
    const stillGoing = lines.map(
      (l) =>
        /fire (\S+) of "job:long" skipped: the previous run is still going \((on this instance|on \S+ pid \d+)/.exec(
          l,
        )?.[1],
    );
    expect(stillGoing.filter((fire) => fire === undefined)).toEqual([]);
    expect(stillGoing.length).toBeGreaterThanOrEqual(2);
    expect(new Set(stillGoing).size).toBe(stillGoing.length);
    await cleanUp(client, prefix);
  }, 120_000);

  it('the instance running a job is SIGKILLed: the lock frees at its lease and a later fire runs on another instance', async () => {
    const client = redis();
    const prefix = uniquePrefix('cron-kill');
    const instances = await fleet(
      prefix,
      [{ id: 'kill', kind: 'cron-above', holdAtLeastMs: null, runMs: 5_000 }],
      [0, 0, 0],
      1_500,
    );
    await until(async () => Number(await client.get(`${prefix}kill:running`)) === 1, 5_000, 'a run to start');
    const fires = async () => (await client.smembers(`${prefix}kill:fires`)).length;
    const before = await fires();
    // Which instance runs it: the one whose report counts a run.
    const reports = reportsOf(await Promise.all(instances.map((i) => i.report())), 'kill');
    const runner = instances[reports.findIndex((r) => r.runs > 0)];
    await runner.stop('SIGKILL');
    const killedAt = Date.now();
    // Its lease (1.5 s) runs out; a later fire runs on one of the two others.
    await until(async () => (await fires()) > before, 5_000, 'a run on another instance');
    expect(Date.now() - killedAt).toBeLessThan(1_500 + 1_500);
    const after = reportsOf(await Promise.all(instances.filter((i) => i !== runner).map((i) => i.report())), 'kill');
    expect(sum(after, (r) => r.runs)).toBeGreaterThanOrEqual(1);
    await Promise.all(instances.map((i) => i.stop()));
    await cleanUp(client, prefix);
  }, 120_000);
});
