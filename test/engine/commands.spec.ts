import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import type { LockEngine } from '../../lib/locking/engine/lock-engine.js';
import type { LockHandle } from '../../lib/types/lock.types.js';
import * as scripts from '../../lib/redis/scripts/lock-scripts.js';
import { SCRIPT_VARIANTS } from '../../lib/redis/scripts/index.js';
import { WAITER_HEARTBEAT_MS } from '../../lib/store/waiter-timing.js';
import { LockTestKit, commandStats, keysUnder, sleep, track, until, withoutHarness } from '../support/lock-test-kit.js';

/** Commands a client sends itself (Lua scripts cannot send these, except PUBLISH, which wakes waiters). */
const ROUND_TRIPS = new Set([
  'eval',
  'evalsha',
  'eval_ro',
  'evalsha_ro',
  'fcall',
  'fcall_ro',
  'subscribe',
  'unsubscribe',
  'psubscribe',
  'punsubscribe',
  'ssubscribe',
  'sunsubscribe',
  'publish',
  'spublish',
  'multi',
  'exec',
]);
type Calls = Record<string, number>;

async function allCommandCalls(redis: Redis): Promise<Calls> {
  return withoutHarness(await commandStats(redis));
}

const roundTrips = (calls: Calls) =>
  Object.fromEntries(Object.entries(calls).filter(([name]) => ROUND_TRIPS.has(name)));
const total = (calls: Calls) => Object.values(calls).reduce((a, b) => a + b, 0);
function minus(a: Calls, b: Calls): Calls {
  const out: Calls = {};
  for (const name of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const d = (a[name] ?? 0) - (b[name] ?? 0);
    if (d !== 0) out[name] = d;
  }
  return out;
}

/**
 * Watches every command of a server (MONITOR) to tell the waiters' heartbeats (KEEP_WAITING, one call per process
 * every 150 ms while it has waiters) from the other script calls, which INFO commandstats counts alike.
 */
class Heartbeats {
  /** Heartbeats seen, in the server's own order of commands. */
  count = 0;
  /** `count` at the INFO run with the last CONFIG RESETSTAT (MONITOR does not show CONFIG itself). */
  base = 0;
  /** `count` when the server ran the last INFO: the heartbeats that INFO's counters include. */
  atInfo = 0;
  /** INFO commands seen: a reader of `atInfo` waits until its own INFO has been seen. */
  infos = 0;
  /** performance.now() of the last command that is not a heartbeat (nor this watch's own). */
  lastOther = performance.now();

  static async watch(client: Redis): Promise<Heartbeats> {
    const watch = new Heartbeats();
    const monitor = await client.monitor();
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      const [name, sha] = args;
      // Commands a script runs are shown too (source "lua"): they belong to their script's call.
      if (source === 'lua') return;
      if (/^evalsha$/i.test(name) && sha === scripts.KEEP_WAITING.sha) watch.count++;
      else if (/^info$/i.test(name)) {
        watch.atInfo = watch.count;
        watch.infos++;
      } else if (!/^(ping|client)$/i.test(name)) watch.lastOther = performance.now();
    });
    watch.stop = () => monitor.disconnect();
    return watch;
  }

  stop: () => void = () => undefined;
}

describe('Redis commands per operation (private redis-server)', () => {
  const kit = new LockTestKit();
  let url: string;
  let admin: Redis;
  let heartbeats: Heartbeats;
  /** EXECs of the test's own since the last reset, left out of the counts. */
  let ownExecs = 0;

  /** The counters since the last reset, without the test's own commands. */
  async function commandCalls(redis: Redis): Promise<Calls> {
    return minus(await allCommandCalls(redis), { exec: ownExecs });
  }

  beforeAll(async () => {
    url = (await kit.server()).url;
    admin = kit.redis(url);
    // Load every script up front: a first-use NOSCRIPT round trip would count against whichever test ran first.
    for (const script of SCRIPT_VARIANTS) await admin.script('LOAD', script.source);
    heartbeats = await Heartbeats.watch(kit.redis(url));
    kit.add(async () => heartbeats.stop());
  });
  afterAll(() => kit.closeAll());

  /**
   * Waits until no lock command other than the waiters' heartbeats has run for 300 ms (every waiter asleep), then
   * resets the counters (the heartbeat count too).
   */
  async function quietThenReset(): Promise<void> {
    await until(() => performance.now() - heartbeats.lastOther >= 300, 10_000, 'no lock command for 300 ms');
    // One transaction, so that no heartbeat runs between the reset and the INFO that marks it in the monitor.
    const seen = heartbeats.infos;
    await admin.multi().config('RESETSTAT').info('server').exec();
    await until(() => heartbeats.infos > seen, 5_000, 'the monitor to see the reset');
    heartbeats.base = heartbeats.atInfo;
    // That transaction's EXEC is counted after the reset: it is the test's, not the library's.
    ownExecs = 1;
  }

  /** A plain reset of the counters (no heartbeat running then to tell apart). */
  async function resetStats(): Promise<void> {
    await admin.config('RESETSTAT');
    ownExecs = 0;
  }

  /**
   * The counters since the last reset, without the heartbeats' script calls (their commands inside the script are
   * left: reports only), and the number of heartbeats. Both as of the same INFO, in the server's order of commands.
   */
  async function callsWithoutHeartbeats(): Promise<{ calls: Calls; beats: number }> {
    const seen = heartbeats.infos;
    const calls = await commandCalls(admin);
    await until(() => heartbeats.infos > seen, 5_000, 'the monitor to see the INFO');
    const beats = heartbeats.atInfo - heartbeats.base;
    return { calls: minus(calls, { evalsha: beats }), beats };
  }

  it('a contended acquisition costs the same small number of commands whether the holder holds 100 ms or 1500 ms', async () => {
    const holder = kit.engine({ redis: url });
    const waiter = kit.peer(holder, { redis: url });
    await Promise.all([holder.ping(), waiter.ping()]);
    let n = 0;
    const beats: number[] = [];

    /** Commands from the holder's 10 s hold of `holdMs` (and its release), with or without one waiter. */
    const run = async (holdMs: number, contended: boolean): Promise<Calls> => {
      const key = `k${++n}`;
      const lock = await holder.acquire(key, { leaseMs: 10_000, autoExtend: false });
      await quietThenReset();
      const waiting = contended ? track(waiter.acquire(key, { leaseMs: 10_000, waitTimeoutMs: 20_000 })) : undefined;
      await sleep(holdMs);
      expect(waiting?.settled ?? false).toBe(false);
      await lock.release();
      let second: LockHandle | undefined;
      if (waiting) {
        second = await waiting.promise;
        await sleep(1_300); // past the 1 s subscription linger: the UNSUBSCRIBE belongs to this acquisition
      }
      const counted = await callsWithoutHeartbeats();
      beats.push(counted.beats);
      await second?.release();
      return counted.calls;
    };

    const report: Record<string, unknown> = {};
    const costs: Calls[] = [];
    for (const holdMs of [100, 1_500]) {
      const alone = await run(holdMs, false);
      const contended = await run(holdMs, true);
      const cost = minus(roundTrips(contended), roundTrips(alone));
      costs.push(cost);
      report[`hold ${holdMs} ms`] = {
        waiterRoundTrips: cost,
        holderAlone: roundTrips(alone),
        allCommandsIncludingLua: minus(contended, alone),
      };
    }
    console.log(
      `commands of one contended acquisition:\n${JSON.stringify(report, null, 2)}\nwaiters' heartbeats: ${beats.join(', ')}`,
    );

    // Besides the heartbeats (one call per process every 150 ms while it waits), the cost does not grow with the
    // wait: no polling.
    expect(costs[1]).toEqual(costs[0]);
    const [alone100, contended100, alone1500, contended1500] = beats;
    expect(alone100 + alone1500).toBe(0);
    expect(contended100).toBeLessThanOrEqual(2);
    expect(contended1500).toBeGreaterThanOrEqual(5);
    expect(contended1500).toBeLessThanOrEqual(Math.ceil(1_500 / WAITER_HEARTBEAT_MS) + 2);
    // The wake-up PUBLISH runs inside the holder's release; the waiter's own round trips exclude it.
    const waiterOwn = { ...costs[0] };
    delete waiterOwn.publish;
    expect(total(waiterOwn)).toBeGreaterThanOrEqual(2);
    expect(total(waiterOwn)).toBeLessThanOrEqual(6);
    expect(total(costs[0])).toBeLessThanOrEqual(7);
    expect(costs[0].publish ?? 0).toBeLessThanOrEqual(1);
  }, 20_000);

  it('acquisitions and releases asked in the same tick while one is under way go out together, each with its own answer', async () => {
    const engine = kit.engine({ redis: url });
    const other = kit.peer(engine, { redis: url });
    await Promise.all([engine.ping(), other.ping()]);
    const taken = await other.acquire('busy'); // held elsewhere: one item of the batch is refused
    await quietThenReset();
    // The first call goes out alone (nothing under way); the 25 asked in the same tick meanwhile form batches.
    const first = engine.tryAcquire('first');
    const asked = [
      ...Array.from({ length: 20 }, (_, i) => engine.tryAcquire(`d${i}`)),
      ...Array.from({ length: 4 }, () => engine.tryAcquire('shared', { mode: 'read' })),
      engine.tryAcquire('busy'),
    ];
    const handles = await Promise.all([first, ...asked]);
    const acquireCalls = roundTrips(await commandCalls(admin)).evalsha ?? 0;
    // One by one that would be 26 script calls; together: the lone first one, then batches of at most 16.
    expect(acquireCalls).toBeLessThanOrEqual(4);
    // Each caller got its own answer: the distinct keys and the shared read lock granted, the busy key refused.
    expect(handles.slice(0, 21).every((h) => h?.isHeld)).toBe(true);
    expect(handles.slice(21, 25).every((h) => h?.mode === 'read')).toBe(true);
    expect(handles[25]).toBeNull();
    expect((await engine.inspect('shared'))?.holders).toHaveLength(4); // four owners (no shared owner context)
    // Fencing tokens rise per key, whatever the server's clock does within one script (Redis 7.4 and Valkey 8 give
    // one TIME to a whole script, so holds of different keys granted in one batch may share a token): the four
    // readers of 'shared', granted one after the other (in one batched script), each got a higher one.
    const shared = handles.slice(21, 25).map((h) => h?.fencingToken ?? 0);
    for (let i = 1; i < shared.length; i++) expect(shared[i]).toBeGreaterThan(shared[i - 1]);
    await resetStats();
    const released = await Promise.all(handles.map((h) => h?.release() ?? Promise.resolve(false)));
    expect(released.slice(0, 25).every(Boolean)).toBe(true);
    expect(roundTrips(await commandCalls(admin)).evalsha ?? 0).toBeLessThanOrEqual(8);
    await taken.release();
    expect(await keysUnder(admin, engine.settings.keyPrefix)).toEqual([]);
  });

  it('a reader joins and leaves a read lock that other readers hold and nobody waits for in a few commands, without a purge', async () => {
    const engine = kit.engine({ redis: url });
    const other = kit.peer(engine, { redis: url });
    const first = await engine.acquire('k', { mode: 'read' });
    const second = await other.acquire('k', { mode: 'read' }); // two holders: the full form (a leases set)
    await quietThenReset();
    const third = await engine.acquire('k', { mode: 'read' });
    const joined = await commandCalls(admin);
    await resetStats();
    expect(await third.release()).toBe(true);
    const left = await commandCalls(admin);
    // One script call each. Joining: TIME, EXISTS, HMGET, ZRANGE, HSET, ZADD, PEXPIREAT twice, and SET of the
    // key's fence tombstone (its last fencing token, kept past the state); leaving: HMGET, EXISTS, ZSCORE, TIME,
    // HDEL, ZREM, ZCARD. The full pass costs about twice that (purge, expiry bookkeeping).
    expect(roundTrips(joined)).toEqual({ evalsha: 1 });
    expect(roundTrips(left)).toEqual({ evalsha: 1 });
    expect(joined.set).toBe(1);
    expect(total(joined) - 1).toBeLessThanOrEqual(9);
    expect(total(left) - 1).toBeLessThanOrEqual(7);
    expect(joined.zrangebyscore ?? 0).toBe(0);
    expect(left.zrangebyscore ?? 0).toBe(0);
    expect((await engine.inspect('k'))?.holders.map((h) => h.fencingToken).sort()).toEqual(
      [first.fencingToken, second.fencingToken].sort(),
    );
    expect(third.fencingToken).toBeGreaterThan(second.fencingToken);
    await first.release();
    await second.release();
    expect(await keysUnder(admin, engine.settings.keyPrefix)).toEqual([]);
  });

  it('the watchdog renews many holds in one round trip per tick', async () => {
    const engine = kit.engine({ redis: url });
    const holds = await Promise.all(
      Array.from({ length: 50 }, (_, i) => engine.acquire(`h${i}`, { leaseMs: 600, autoExtend: true })),
    );
    await resetStats();
    await sleep(1_200); // 6 renewal periods of leaseMs/3
    const calls = roundTrips(await commandCalls(admin));
    console.log(`watchdog, 50 holds for 1.2 s at leaseMs 600: ${JSON.stringify(calls)}`);
    const renewals = (calls.evalsha ?? 0) + (calls.eval ?? 0);
    // One timer and round trip per lock would be about 50 x 6 = 300.
    expect(renewals).toBeGreaterThanOrEqual(2);
    expect(renewals).toBeLessThanOrEqual(15);
    expect(holds.every((h) => h.isHeld)).toBe(true);
    // One key per lock: each has a sole holder, whose lease is the state key's own expiry (single-holder form).
    expect(await keysUnder(admin, engine.settings.keyPrefix)).toHaveLength(50);
    await Promise.all(holds.map((h) => h.release()));
  });

  it('a write release wakes one of several waiting writers (one retry), but every waiting reader (one message)', async () => {
    const holderEngine = kit.engine({ redis: url });
    const engines: LockEngine[] = Array.from({ length: 5 }, () => kit.peer(holderEngine, { redis: url }));

    // Writers: 5 engines, each with its own subscriber connection listening on the lock's channel.
    let holder = await holderEngine.acquire('w', { leaseMs: 10_000 });
    const got: LockHandle[] = [];
    const writers = engines.map((e) =>
      e.acquire('w', { leaseMs: 10_000, waitTimeoutMs: 10_000 }).then((h) => got.push(h)),
    );
    await until(async () => (await holderEngine.inspect('w'))?.waitingWriters === 5, 2_000, '5 writers to queue');
    await quietThenReset();
    await holder.release();
    await until(() => got.length > 0, 1_000, 'one writer');
    await sleep(200);
    const afterWriteRelease = roundTrips((await callsWithoutHeartbeats()).calls);
    console.log(`release with 5 waiting writers: ${JSON.stringify(afterWriteRelease)}`);
    expect(got).toHaveLength(1);
    // The release itself plus the one woken writer's successful attempt: the other four did not even retry.
    expect(afterWriteRelease.evalsha).toBe(2);
    expect(afterWriteRelease.publish).toBe(1);
    for (let i = 0; i < 5; i++) {
      await until(() => got.length > i, 1_000, 'the next writer');
      await got[i].release();
    }
    await Promise.all(writers);

    // Readers: 10 waiting readers over 5 engines, one message lets all of them in.
    holder = await holderEngine.acquire('r', { leaseMs: 10_000 });
    const readers = Array.from({ length: 10 }, (_, i) =>
      engines[i % 5].acquire('r', { mode: 'read', leaseMs: 10_000, waitTimeoutMs: 10_000 }),
    );
    await until(async () => (await holderEngine.inspect('r'))?.waitingReaders === 10, 2_000, '10 readers to queue');
    await quietThenReset();
    await holder.release();
    const reading = await Promise.all(readers);
    await sleep(100);
    const afterReadRelease = roundTrips((await callsWithoutHeartbeats()).calls);
    console.log(`release with 10 waiting readers: ${JSON.stringify(afterReadRelease)}`);
    expect(afterReadRelease.publish).toBe(1);
    expect(afterReadRelease.evalsha).toBe(11);
    expect((await holderEngine.inspect('r'))?.holders).toHaveLength(10);
    await Promise.all(reading.map((r) => r.release()));
  }, 20_000);
});
