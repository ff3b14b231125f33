import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import type { CronAppMessage, CronAppTask } from '../fixtures/cron-app.js';
import { keysUnder, redisUrl, sleep, uniquePrefix, until } from '../support/lock-test-kit.js';

const APP = fileURLToPath(new URL('../fixtures/cron-app.ts', import.meta.url));
const REGISTER_TS = fileURLToPath(new URL('../support/register-ts.mjs', import.meta.url));
/** Debian's libfaketime (package `faketime`, installed by .ci/run): shifts a process's wall clock. */
const LIBFAKETIME = ['/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1', '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1'].find(existsSync);

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
      Object.assign(env, { LD_PRELOAD: LIBFAKETIME, FAKETIME: `${skewMs >= 0 ? '+' : ''}${(skewMs / 1000).toFixed(3)}`, FAKETIME_DONT_FAKE_MONOTONIC: '1', FAKETIME_NO_CACHE: '1' });
    }
    this.child = fork(APP, [JSON.stringify(task)], { execArgv: ['--import', REGISTER_TS], env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.child.on('message', (m) => this.inbox.push(m as CronAppMessage));
    running.add(this);
  }

  async next<T extends CronAppMessage['type']>(type: T, timeoutMs = 30_000): Promise<MessageOf<T>> {
    await until(
      () => {
        const failure = this.inbox.find((m) => m.type === 'error');
        if (failure) throw new Error(`cron app ${this.child.pid} failed: ${(failure as MessageOf<'error'>).message}`);
        if (this.child.exitCode !== null || this.child.signalCode !== null) throw new Error(`cron app ${this.child.pid} exited`);
        return this.inbox.some((m) => m.type === type);
      },
      timeoutMs,
      `"${type}" from cron app ${this.child.pid}`,
    );
    return this.inbox.splice(this.inbox.findIndex((m) => m.type === type), 1)[0] as MessageOf<T>;
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

/** Starts one instance per skew, all with `task`; resolves once every one is ready. */
async function fleet(task: Omit<CronAppTask, 'url'>, skews: readonly number[]): Promise<Instance[]> {
  const instances = skews.map((skew) => new Instance({ ...task, url: redisUrl() }, skew));
  await Promise.all(instances.map((i) => i.next('ready', 60_000)));
  return instances;
}

/** Runs per fire second recorded under `prefix`, for the fires from `from` to `to` (seconds, inclusive). */
async function runsPerFire(client: Redis, prefix: string, from: number, to: number): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  for (let s = from; s <= to; s++) out.set(s, Number((await client.get(`${prefix}runs:${s}`)) ?? 0));
  return out;
}

async function cleanUp(client: Redis, prefix: string): Promise<void> {
  const keys = await keysUnder(client, prefix);
  if (keys.length > 0) await client.del(...keys);
}

describe('@ScheduledLock with the real @nestjs/schedule over 3 processes', () => {
  it(
    'a 1 s cron job runs exactly once per fire: same clocks with the default hold, skewed clocks (-300, 0, +400 ms) with holdAtLeastMs 900; ' +
      'skewed clocks without a hold run fires twice (so the test can fail)',
    async () => {
      const client = redis();
      const same = uniquePrefix('cron-same');
      const skewed = uniquePrefix('cron-skew');
      const bare = uniquePrefix('cron-bare');
      const skews = [-300, 0, 400];
      const groups = await Promise.all([
        fleet({ prefix: same, job: 'cron-above', holdAtLeastMs: null, runMs: 5 }, [0, 0, 0]),
        fleet({ prefix: skewed, job: 'cron-below', holdAtLeastMs: 900, runMs: 5 }, skews),
        fleet({ prefix: bare, job: 'cron-above', holdAtLeastMs: 0, runMs: 5 }, skews),
      ]);
      // Whole fires only: from two seconds after every instance is up to two seconds before the end.
      const from = Math.ceil(Date.now() / 1000) + 2;
      await sleep(20_000);
      const to = Math.floor(Date.now() / 1000) - 2;
      const [sameRuns, skewedRuns, bareRuns] = await Promise.all([same, skewed, bare].map((p) => runsPerFire(client, p, from, to)));
      const reports = await Promise.all(groups.map((g) => Promise.all(g.map((i) => i.report()))));
      await Promise.all(groups.flat().map((i) => i.stop()));

      const counts = (m: Map<number, number>) => [...m.values()];
      expect(counts(sameRuns).length).toBeGreaterThanOrEqual(14);
      expect(counts(sameRuns).filter((n) => n !== 1)).toEqual([]);
      expect(counts(skewedRuns).filter((n) => n !== 1)).toEqual([]);
      // Without a hold, the instances whose clocks are behind find each fire free again: most fires run 2 or 3 times.
      expect(counts(bareRuns).filter((n) => n > 1).length).toBeGreaterThan(counts(bareRuns).length / 2);

      // The losers logged nothing above debug; each of their skipped fires was counted.
      const [sameReports] = reports;
      expect(sameReports.flatMap((r) => r.logs)).toEqual([]);
      const busy = sameReports.reduce((n, r) => n + (r.skipped.busy ?? 0), 0);
      expect(busy).toBeGreaterThanOrEqual(2 * counts(sameRuns).length);
      for (const p of [same, skewed, bare]) await cleanUp(client, p);
    },
    90_000,
  );

  it('a 2.5 s job on a 1 s schedule never runs twice at once; the skipped fires are counted and the running instance says so', async () => {
    const client = redis();
    const prefix = uniquePrefix('cron-long');
    const instances = await fleet({ prefix, job: 'cron-below', holdAtLeastMs: null, runMs: 2_500 }, [0, 0, 0]);
    await sleep(8_000);
    const reports = await Promise.all(instances.map((i) => i.report()));
    await Promise.all(instances.map((i) => i.stop()));
    const runs = reports.reduce((n, r) => n + r.runs, 0);
    const busy = reports.reduce((n, r) => n + (r.skipped.busy ?? 0), 0);
    expect(Number(await client.get(`${prefix}most`))).toBe(1);
    expect(runs).toBeGreaterThanOrEqual(2);
    // About 8 fires per instance: each fire either ran or was counted as skipped.
    expect(runs + busy).toBeGreaterThanOrEqual(18);
    expect(reports.flatMap((r) => r.logs).some((l) => /fire skipped, the previous run \(started \d+ ms ago\) is still going/.test(l))).toBe(true);
    await cleanUp(client, prefix);
  }, 60_000);

  it('the instance running a job is SIGKILLed: the lock frees at its lease and a later fire runs on another instance', async () => {
    const client = redis();
    const prefix = uniquePrefix('cron-kill');
    const instances = await fleet({ prefix, job: 'cron-above', holdAtLeastMs: null, runMs: 5_000, leaseMs: 1_500 }, [0, 0, 0]);
    await until(async () => Number(await client.get(`${prefix}running`)) === 1, 5_000, 'a run to start');
    const fires = async () => (await client.smembers(`${prefix}fires`)).length;
    const before = await fires();
    // Which instance runs it: the one whose report counts a run.
    const reports = await Promise.all(instances.map((i) => i.report()));
    const runner = instances[reports.findIndex((r) => r.runs > 0)];
    await runner.stop('SIGKILL');
    const killedAt = Date.now();
    // Its lease (1.5 s) runs out; a later fire runs on one of the two others.
    await until(async () => (await fires()) > before, 5_000, 'a run on another instance');
    expect(Date.now() - killedAt).toBeLessThan(1_500 + 1_500);
    const after = await Promise.all(instances.filter((i) => i !== runner).map((i) => i.report()));
    expect(after.reduce((n, r) => n + r.runs, 0)).toBeGreaterThanOrEqual(1);
    await Promise.all(instances.map((i) => i.stop()));
    await cleanUp(client, prefix);
  }, 60_000);

  it('@Interval (default hold: 90 % of the interval) and @Timeout (once across instances started together)', async () => {
    const client = redis();
    const interval = uniquePrefix('interval');
    const timeout = uniquePrefix('timeout');
    const [intervals, timeouts] = await Promise.all([
      fleet({ prefix: interval, job: 'interval', holdAtLeastMs: null, runMs: 5 }, [0, 0, 0]),
      fleet({ prefix: timeout, job: 'timeout', holdAtLeastMs: 3_000, runMs: 5 }, [0, 0, 0]),
    ]);
    const started = Date.now();
    await sleep(4_000);
    const [intervalReports, timeoutReports] = await Promise.all([intervals, timeouts].map((g) => Promise.all(g.map((i) => i.report()))));
    const elapsed = Date.now() - started;
    await Promise.all([...intervals, ...timeouts].map((i) => i.stop()));
    const intervalRuns = intervalReports.reduce((n, r) => n + r.runs, 0);
    // Three timers of 500 ms would run about 24 times in 4 s; held 450 ms each, at most one run per 450 ms.
    expect(intervalRuns).toBeGreaterThanOrEqual(4);
    expect(intervalRuns).toBeLessThanOrEqual(Math.ceil(elapsed / 450) + 2);
    expect(Number(await client.get(`${interval}most`))).toBe(1);
    expect(timeoutReports.reduce((n, r) => n + r.runs, 0)).toBe(1);
    for (const p of [interval, timeout]) await cleanUp(client, p);
  }, 60_000);
});
