import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Controller, Injectable, Post } from '@nestjs/common';
import { Cluster, Redis } from 'ioredis';
import { Semaphore } from '../../lib/decorators/semaphore.decorator.js';
import { WriteLocked } from '../../lib/decorators/write-locked.decorator.js';
import { LockConfigError } from '../../lib/errors/lock-config.error.js';
import { LockLostError } from '../../lib/errors/lock-lost.error.js';
import { LockUnavailableError } from '../../lib/errors/lock-unavailable.error.js';
import { LockEngine } from '../../lib/locking/engine/lock-engine.js';
import type { LockEngineOptions } from '../../lib/locking/engine/engine-options.js';
import type { AcquireCall } from '../../lib/store/lock-store.js';
import { LockService } from '../../lib/nest/lock.service.js';
import { RedisLockModule } from '../../lib/nest/redis-lock.module.js';
import { QuorumLockStore } from '../../lib/redis/quorum/quorum-lock-store.js';
import type { WorkerTask } from '../fixtures/worker-protocol.js';
import { RedisProcess, answersPing } from '../support/faults.js';
import {
  LockTestKit,
  abortedWithin,
  keysUnder,
  redisNames,
  redisUrl,
  rejectionOf,
  sleep,
  uniquePrefix,
  until,
} from '../support/lock-test-kit.js';
import { WorkerProcess } from '../support/worker-process.js';

@Injectable()
class QuorumReports {
  @Semaphore('report:<tenant>', { limit: 2 })
  build(tenant: string): string {
    return tenant;
  }

  @WriteLocked('ledger')
  post(): string {
    return 'posted';
  }
}

@Controller('exports')
class QuorumExports {
  @Post()
  @Semaphore('exports', { limit: 3 })
  run(): string {
    return 'exported';
  }
}

@Injectable()
class QuorumLedger {
  @WriteLocked('ledger')
  async post(): Promise<string> {
    await Promise.resolve();
    return 'posted';
  }
}

const COMMAND_TIMEOUT_MS = 1_000;
/** Slack on top of a documented bound before a test calls it broken, in milliseconds (a loaded 2-core machine). */
const SLACK_MS = 500;

describe('quorum over 3 independent masters', () => {
  const kit = new LockTestKit();
  let masters: RedisProcess[] = [];

  afterEach(async () => {
    for (const m of masters) if (m.paused) m.resume();
    try {
      await kit.closeAll();
    } finally {
      await Promise.all(masters.map((m) => m.dispose()));
      masters = [];
    }
  });

  async function startMasters(): Promise<RedisProcess[]> {
    masters = await Promise.all([RedisProcess.start(), RedisProcess.start(), RedisProcess.start()]);
    return masters;
  }

  /** The keys under `prefix` on every master that is running (a killed master has none). */
  const keysOnMasters = async (prefix: string): Promise<string[]> => {
    const found: string[] = [];
    for (const m of masters) {
      if (m.paused || !(await answersPing('127.0.0.1', m.port))) continue;
      found.push(...(await keysOf(m, prefix)).map((k) => `${m.url} ${k}`));
    }
    return found;
  };

  async function keysOf(master: RedisProcess, prefix: string): Promise<string[]> {
    const client = new Redis(master.url, { maxRetriesPerRequest: 1 });
    try {
      return await keysUnder(client, prefix);
    } finally {
      client.disconnect();
    }
  }

  async function onMaster<T>(master: RedisProcess, fn: (client: Redis) => Promise<T>): Promise<T> {
    const client = new Redis(master.url, { maxRetriesPerRequest: 1 });
    try {
      return await fn(client);
    } finally {
      client.disconnect();
    }
  }

  /** An engine over the masters, on `prefix`; keys left behind on any running master fail the test. */
  function engine(prefix: string, options: Partial<LockEngineOptions> = {}): LockEngine {
    const e = kit.engine({
      redis: masters.map((m) => m.url),
      keyPrefix: prefix,
      commandTimeoutMs: COMMAND_TIMEOUT_MS,
      ...options,
    });
    kit.watchKeys(prefix, keysOnMasters);
    return e;
  }

  /** A quorum store over the masters, used directly (no engine), on `prefix`. */
  function quorumStore(prefix: string): { store: QuorumLockStore; errors: unknown[] } {
    const errors: unknown[] = [];
    const store = new QuorumLockStore(
      masters.map((m) => m.url),
      {
        keyPrefix: prefix,
        identity: { host: 'h', pid: 1, app: 'a' },
        subscriptionLingerMs: 100,
        commandTimeoutMs: COMMAND_TIMEOUT_MS,
        onConnectionError: (err) => errors.push(err),
        onConnectionState: () => undefined,
      },
    );
    kit.add(() => store.close());
    kit.watchKeys(prefix, keysOnMasters);
    return { store, errors };
  }

  it('wake-ups count as received once subscribed on a majority of the masters, and come from any of them', async () => {
    await startMasters();
    const prefix = uniquePrefix('quorum');
    const { store } = quorumStore(prefix);
    const lock = store.lock('k');
    masters[1].pause();
    masters[2].pause();
    const wakeUps: unknown[] = [];
    const subscription = store.listen(lock, (w) => wakeUps.push(w));
    // Master 0 confirms at once; one master is not enough: a release that reached masters 1 and 2 only would be missed.
    await sleep(200);
    expect(store.isListening(lock)).toBe(false);
    masters[1].resume();
    await subscription.ready;
    expect(store.isListening(lock)).toBe(true);
    masters[2].resume();
    // A wake-up published on one master alone reaches the listener, once that master has the subscription too (it
    // was sent while the master was paused: a message published before the master ran it would reach nobody).
    const channel = redisNames(prefix, 'k').channel;
    await until(
      async () => (await onMaster(masters[2], (c) => c.pubsub('NUMSUB', channel)))[1] === 1,
      5_000,
      'master 2 to subscribe',
    );
    await onMaster(masters[2], (c) => c.publish(channel, 'r'));
    await until(() => wakeUps.length === 1, 2_000, 'the wake-up');
    expect(wakeUps).toEqual(['readers']);
    subscription.stop();
  }, 30_000);

  it('processes on 3 masters exclude each other: 3 processes x 60 read-modify-write increments end at 180, in fencing order', async () => {
    await startMasters();
    const prefix = uniquePrefix('quorum');
    kit.watchKeys(prefix, keysOnMasters);
    const counterKey = `${prefix}counter`;
    const iterations = 60;
    const task: WorkerTask = {
      kind: 'counter',
      url: redisUrl(),
      masters: masters.map((m) => m.url),
      prefix,
      lockKey: 'counter-lock',
      counterKey,
      iterations,
      locked: true,
    };
    const workers = Array.from({ length: 3 }, () => WorkerProcess.start(kit, task));
    await Promise.all(workers.map((w) => w.next('ready')));
    for (const w of workers) w.send({ type: 'go' });
    const results = await Promise.all(workers.map((w) => w.next('done', 60_000)));
    await Promise.all(workers.map((w) => w.exited));
    const redis = kit.redis();
    const final = Number(await redis.get(counterKey));
    await redis.del(counterKey);
    expect(final).toBe(3 * iterations);
    // Each hold saw what the previous one wrote: by fencing token, the values read are 0..179.
    const byFence = results.flatMap((r) => r.records).sort((a, b) => a[0] - b[0]);
    expect(byFence.map(([, value]) => value)).toEqual(Array.from({ length: 3 * iterations }, (_, i) => i));
    // Every master served the lock (not one Redis standing in for all).
    for (const m of masters) {
      const stats = await onMaster(m, (c) => c.info('commandstats'));
      expect(stats).toMatch(/cmdstat_evalsha:calls=\d+/);
    }
  }, 90_000);

  it('with one master killed the other two are a majority: locks are granted within the bound and still exclude', async () => {
    await startMasters();
    const prefix = uniquePrefix('quorum');
    const a = engine(prefix);
    const b = engine(prefix);
    await a.withLock('warm-up', () => undefined);
    await masters[0].kill();

    const started = performance.now();
    const held = await a.acquire('k');
    expect(performance.now() - started).toBeLessThan(COMMAND_TIMEOUT_MS + SLACK_MS);
    expect(await b.tryAcquire('k')).toBeNull();
    expect(await b.tryAcquire('k', { mode: 'read' })).toBeNull();
    const waiting = b.acquire('k', { waitTimeoutMs: 5_000 });
    await held.release();
    const next = await waiting;
    expect(next.fencingToken).toBeGreaterThan(held.fencingToken);
    await next.release();

    // Read-modify-writes from both engines at once stay exclusive.
    let counter = 0;
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? a : b).withLock('counter', async () => {
          const read = counter;
          await sleep(2);
          counter = read + 1;
        }),
      ),
    );
    expect(counter).toBe(20);
  }, 30_000);

  it('with two masters killed, acquire rejects with LockUnavailableError naming the masters, within the bound', async () => {
    await startMasters();
    const prefix = uniquePrefix('quorum');
    const a = engine(prefix);
    await masters[1].kill();
    await masters[2].kill();
    const started = performance.now();
    const err = await rejectionOf(a.acquire('k', { waitTimeoutMs: 5_000 }));
    const took = performance.now() - started;
    expect(err).toBeInstanceOf(LockUnavailableError);
    const unavailable = err as LockUnavailableError;
    expect(unavailable.reason).toBe('unreachable');
    expect(unavailable.operation).toBe('acquire');
    expect(unavailable.message).toContain(`127.0.0.1:${masters[1].port}`);
    expect(unavailable.message).toContain(`127.0.0.1:${masters[2].port}`);
    expect(took).toBeLessThan(COMMAND_TIMEOUT_MS + SLACK_MS);
    // The one master left was not left holding anything.
    await until(
      async () => (await keysOf(masters[0], prefix)).length === 0,
      3_000,
      'the grant on the master left to be undone',
    );
    const ping = await a.ping(500);
    expect(ping.command).toBe(false);
    expect(ping.error).toContain(`127.0.0.1:${masters[1].port}`);
  }, 30_000);

  it('a SIGSTOPped master does not stall the calls: the other two grant, exclude and release within the bound', async () => {
    await startMasters();
    const prefix = uniquePrefix('quorum');
    const a = engine(prefix);
    const b = engine(prefix);
    await a.withLock('warm-up', () => undefined);
    await b.withLock('warm-up', () => undefined);
    masters[2].pause();

    const bounded = async <T>(call: () => Promise<T>): Promise<T> => {
      const started = performance.now();
      const result = await call();
      expect(performance.now() - started).toBeLessThan(COMMAND_TIMEOUT_MS + SLACK_MS);
      return result;
    };
    const held = await bounded(() => a.acquire('k'));
    expect(await bounded(() => b.tryAcquire('k'))).toBeNull();
    expect((await bounded(() => b.inspect('k')))?.holders).toHaveLength(1);
    await bounded(() => held.release());
    const next = await bounded(() => b.acquire('k'));
    await bounded(() => next.release());

    // Back: what it was sent meanwhile is applied, and nothing is left on it once the queued commands ran.
    masters[2].resume();
    await until(
      async () => (await keysOf(masters[2], prefix)).length === 0,
      3_000,
      'the paused master to end up empty',
    );
  }, 30_000);

  it('a master restarted empty while a write lock is held does not let a second writer in (delayed restart)', async () => {
    await startMasters();
    const prefix = uniquePrefix('quorum');
    const leaseMs = 3_000;
    const first = engine(prefix, { leaseMs });
    const second = engine(prefix, { leaseMs });
    // The second engine has used a lease of leaseMs: a master that comes back must be up longer than that.
    await second.withLock('warm-up', () => undefined);

    // The writer's hold is on a bare majority, masters 0 and 1: master 2 does not have it.
    const held = await first.acquire('k', { autoExtend: false });
    const names = redisNames(prefix, 'k');
    await onMaster(masters[2], (c) => c.del(names.state, names.leases));
    // Master 1 restarts empty: with master 2 it would be a majority without the writer.
    await masters[1].restart();
    // Every master answers the second engine again (so the restarted one would grant it, were it counted).
    await until(
      async () => (await second.ping(500)).error === undefined,
      5_000,
      'the second engine to reach every master again',
    );
    expect(await onMaster(masters[1], (c) => c.exists(names.state))).toBe(0);

    expect(await second.tryAcquire('k')).toBeNull();
    expect(await second.tryAcquire('k', { mode: 'read' })).toBeNull();
    expect(held.isHeld).toBe(true);

    // Once the writer's lease has run out and the restarted master has been up longer than it, the lock is free again.
    const next = await second.acquire('k', { waitTimeoutMs: 10_000 });
    await next.release();
    await held.release().catch(() => undefined);
  }, 30_000);

  it('a majority that grants only after the validity (lease − elapsed − drift) has passed does not count', async () => {
    await startMasters();
    const prefix = uniquePrefix('quorum');
    const a = engine(prefix);
    await a.withLock('warm-up', () => undefined);
    // Masters 1 and 2 answer only after about 150 ms: a grant of a 100 ms lease collected that late is worth nothing.
    const slowMajority = async <T>(call: () => Promise<T>): Promise<T> => {
      masters[1].pause();
      masters[2].pause();
      const result = call();
      await sleep(150);
      masters[1].resume();
      masters[2].resume();
      return result;
    };
    expect(await slowMajority(() => a.tryAcquire('k', { leaseMs: 100 }))).toBeNull();
    // With a lease long enough for the same delay, the same majority counts.
    const held = await slowMajority(() => a.tryAcquire('k', { leaseMs: 5_000 }));
    expect(held).not.toBeNull();
    await held!.release();
  }, 30_000);

  it('the fencing token is the largest among the grants', async () => {
    await startMasters();
    const prefix = uniquePrefix('quorum');
    const a = engine(prefix);
    await a.withLock('warm-up', () => undefined);
    // Master 1 has seen a far larger fencing token on this lock than the clock gives; master 2 is down, so the
    // majority is masters 0 and 1.
    const large = 9_000_000_000_000_000;
    await onMaster(masters[1], (c) => c.hset(redisNames(prefix, 'k').state, 'f', String(large)));
    await masters[2].kill();
    const held = await a.acquire('k');
    expect(held.fencingToken).toBe(large + 1);
    expect((await a.inspect('k'))?.fencingToken).toBe(large + 1);
    await held.release();
  }, 30_000);

  it('the watchdog reports a hold lost once a majority of the masters no longer has it, not before', async () => {
    await startMasters();
    const prefix = uniquePrefix('quorum');
    const leaseMs = 600;
    const a = engine(prefix, { leaseMs });
    const lost: string[] = [];
    a.on('lost', (e) => lost.push(e.key));
    const held = await a.acquire('k');
    const names = redisNames(prefix, 'k');
    const drop = (m: RedisProcess) => onMaster(m, (c) => c.del(names.state, names.leases));

    // One master forgets it: the other two still renew it, through several leases.
    await drop(masters[0]);
    await sleep(leaseMs * 2);
    expect(held.isHeld).toBe(true);
    expect(lost).toEqual([]);

    // A second one forgets it: the next renewal finds it on a minority only; that minority's remnant is freed.
    await drop(masters[1]);
    const reason = await abortedWithin(held.signal, leaseMs * 2);
    expect(reason).toBeInstanceOf(LockLostError);
    expect(lost).toEqual(['k']);
    await until(
      async () => (await keysOf(masters[2], prefix)).length === 0,
      leaseMs / 2,
      'the remnant on master 2 to be freed',
    );
    await held.release().catch(() => undefined);
  }, 30_000);

  it('a failed acquisition leaves nothing on any master, not even on the one that granted it', async () => {
    await startMasters();
    const prefix = uniquePrefix('quorum');
    // The holder took the lock while master 0 was down: it is on masters 1 and 2 only.
    await masters[0].kill();
    const holder = engine(prefix);
    const held = await holder.acquire('k');
    await masters[0].restart();
    // A contender started now: master 0 grants it, masters 1 and 2 refuse.
    const contender = engine(prefix);
    expect(await contender.tryAcquire('k')).toBeNull();
    expect(await contender.tryAcquire('k', { mode: 'read' })).toBeNull();
    // What master 0 records of the contender (its holder records end with its owner ids, `<instance id>:<n>`). The
    // holder's own attempt, sent to master 0 while it was down, may reach it once it is back (ioredis replays what it
    // queued): that grant is the holder's, kept and released with the rest of its lock, so it is not counted here.
    const contenderOnMaster0 = () =>
      onMaster(masters[0], async (c) =>
        Object.values(await c.hgetall(redisNames(prefix, 'k').state)).filter((v) =>
          v.includes(`|${contender.instanceId}:`),
        ),
      );
    await until(async () => (await contenderOnMaster0()).length === 0, 3_000, 'the minority grant to be undone');
    await held.release();
    await until(
      async () => (await keysOf(masters[0], prefix)).length === 0,
      3_000,
      'master 0 to be empty once the holder released',
    );
  }, 30_000);

  it('the masters keep the lease plus the drift allowance; plain refusals leave nothing to undo or remember', async () => {
    await startMasters();
    const prefix = uniquePrefix('quorum');
    const { store } = quorumStore(prefix);
    const lock = store.lock('k');
    const names = redisNames(prefix, 'k');
    const call = (token: string, seq: number): AcquireCall => ({
      lock,
      mode: 'write',
      token,
      leaseMs: 10_000,
      seq,
      undoSeq: seq + 1,
      ownerId: token,
      downgradeToken: '',
      waiterId: '',
      reentry: false,
      fair: false,
    });
    expect(await store.acquire(call('holder', 1))).toMatchObject({ granted: true });
    // The engine counts 10 s from before it sent the attempt; every master keeps 10 s + 1 % + 2 ms from when it
    // applied it, so a master whose clock runs that much fast still has the hold when the holder stops counting on it.
    // Measured on each master's own clock, from the grant (the holder record's `since`) to the lease's end, so a slow
    // test process reading it later does not change it.
    for (const m of masters) {
      const [record, expiry] = await onMaster(m, (c) =>
        Promise.all([c.hget(names.state, 'h:holder'), c.pexpiretime(names.state)]),
      );
      const since = Number(record!.split('|')[3]);
      expect(expiry - since).toBeGreaterThanOrEqual(10_101);
      expect(expiry - since).toBeLessThanOrEqual(10_103);
    }
    // A contender refused by every master: nothing was granted anywhere, so nothing is kept to undo (the store
    // would otherwise keep an entry and a timer per refused attempt for a whole lease).
    for (let i = 0; i < 50; i++) expect(await store.acquire(call(`other${i}`, 1))).toMatchObject({ granted: false });
    expect((store as unknown as { undo: { undone: Set<string> } }).undo.undone.size).toBe(0);
    expect(await store.release(lock, 'holder', 2)).toBe('ended');
  }, 30_000);

  it('close lets a release still under way on a slow master finish: nothing is left on any master', async () => {
    await startMasters();
    const prefix = uniquePrefix('quorum');
    const { store } = quorumStore(prefix);
    const lock = store.lock('k');
    const names = redisNames(prefix, 'k');
    const acquire: AcquireCall = {
      lock,
      mode: 'write',
      token: 'holder',
      leaseMs: 10_000,
      seq: 1,
      undoSeq: 2,
      ownerId: 'holder',
      downgradeToken: '',
      waiterId: '',
      reentry: false,
      fair: false,
    };
    expect(await store.acquire(acquire)).toMatchObject({ granted: true });
    masters[2].pause();
    // Masters 0 and 1 make the majority: the release is decided while master 2's answer is still to come.
    expect(await store.release(lock, 'holder', 3)).toBe('ended');
    setTimeout(() => masters[2].resume(), 200);
    await store.close();
    for (const m of masters) expect(await onMaster(m, (c) => c.exists(names.state, names.leases))).toBe(0);
  }, 30_000);

  it('a waiter that gives up is withdrawn from a slow master after every attempt still queued for it there', async () => {
    await startMasters();
    const prefix = uniquePrefix('quorum');
    const { store } = quorumStore(prefix);
    const lock = store.lock('k');
    const names = redisNames(prefix, 'k');
    const call = (token: string, seq: number, waiterId: string): AcquireCall => ({
      lock,
      mode: 'write',
      token,
      leaseMs: 10_000,
      seq,
      undoSeq: seq + 1,
      ownerId: token,
      downgradeToken: '',
      waiterId,
      reentry: false,
      fair: false,
    });
    expect(await store.acquire(call('holder', 1, ''))).toMatchObject({ granted: true });
    // The waiter's first attempt: masters 0 and 1 refuse and register it; master 2 is paused, so its answer is
    // awaited in the background. The second attempt (after the waiter subscribed) queues behind it for master 2.
    masters[2].pause();
    expect(await store.acquire(call('waiter', 1, 'w1'))).toMatchObject({ granted: false });
    expect(await store.acquire(call('waiter', 3, 'w1'))).toMatchObject({ granted: false });
    // The waiter gives up (abort, timeout): giving up is final on every master.
    await store.cancelWait(lock, 'write', 'w1');
    masters[2].resume();
    await until(
      async () => (await onMaster(masters[2], (c) => c.exists(names.state))) === 1,
      2_000,
      'master 2 to answer',
    );
    await sleep(100);
    for (const m of masters) expect(await onMaster(m, (c) => c.zscore(names.writers, 'w1'))).toBeNull();
    expect(await store.release(lock, 'holder', 2)).toBe('ended');
  }, 30_000);

  it('undoing a re-entry that failed takes back that level alone, never the outer hold; a re-entry a majority refuses frees the rest', async () => {
    await startMasters();
    const prefix = uniquePrefix('quorum');
    const { store, errors } = quorumStore(prefix);
    const lock = store.lock('k');
    const names = redisNames(prefix, 'k');
    const call = (seq: number, reentry: boolean): AcquireCall => ({
      lock,
      mode: 'write',
      token: 'tok',
      leaseMs: 10_000,
      seq,
      undoSeq: seq + 1,
      ownerId: 'owner',
      downgradeToken: '',
      waiterId: '',
      reentry,
      fair: false,
    });
    expect(await store.acquire(call(1, false))).toMatchObject({ granted: true, reentered: false });
    const holdCount = () => onMaster(masters[0], async (c) => (await c.hget(names.state, 'h:tok'))?.split('|')[0]);
    // Masters 1 and 2 go down: a re-entry reaches master 0 alone, which adds a level; no majority answered, so the
    // attempt fails...
    await masters[1].kill();
    await masters[2].kill();
    expect(
      store.describeFailure(await rejectionOf(store.acquire(call(3, true))), 'acquire', 'k', COMMAND_TIMEOUT_MS),
    ).toBeInstanceOf(LockUnavailableError);
    // ...and master 0 takes that level back, the outer level stays: the hold goes on once the masters are back.
    await until(async () => (await holdCount()) === '1', 3_000, 'the re-entry level to be undone on master 0');
    await sleep(100);
    expect(await holdCount()).toBe('1');
    // The engine re-sends an attempt that failed to learn its outcome: it is not applied anew.
    expect(await store.acquire(call(3, true))).toMatchObject({ granted: false });
    await sleep(100);
    expect(await holdCount()).toBe('1');
    await masters[1].restart();
    await masters[2].restart();
    // Masters 1 and 2 came back empty: a majority no longer has the hold, so a re-entry is refused, and master 0's
    // remnant of it is freed.
    await until(async () => (await store.ping(500)).command, 5_000, 'the store to reach the masters again');
    expect(await store.acquire(call(5, true))).toMatchObject({ granted: false, blockedBy: 'not-held' });
    await until(
      async () => (await onMaster(masters[0], (c) => c.exists(names.state))) === 0,
      3_000,
      'the remnant on master 0 to be freed',
    );
    expect(errors).toEqual([]);
  }, 30_000);

  it('forceRelease and inspect on a key a semaphore lives under (on every master) are refused with LockConfigError naming the key, changing nothing', async () => {
    await startMasters();
    const prefix = uniquePrefix('quorum-kind');
    // Quorum mode has no semaphores: these were taken by engines on each master alone (another app sharing the
    // masters).
    const single = masters.map((m) => kit.engine({ redis: m.url, keyPrefix: prefix }));
    const permits = await Promise.all(single.map((e) => e.acquirePermit('sem', { limit: 2 })));
    const quorum = engine(prefix);
    for (const attempt of [quorum.forceRelease('sem'), quorum.inspect('sem')]) {
      const err = await rejectionOf(attempt);
      expect(err).toBeInstanceOf(LockConfigError);
      expect(err).toMatchObject({
        key: 'sem',
        option: 'key',
        message: expect.stringMatching(/"sem" is a semaphore.*inspectPermits.*forceReleasePermits/),
      });
    }
    for (const [i, e] of single.entries()) {
      expect(await e.inspectPermits('sem')).toMatchObject({
        limit: 2,
        used: 1,
        holders: [{ fencingToken: permits[i].fencingToken }],
      });
      expect(permits[i].isHeld).toBe(true);
      expect(await permits[i].release()).toBe(true);
    }
  });

  it('an application with @Semaphore methods does not start in quorum mode: LockConfigError at init naming the methods and why; without them it starts, and LockService refuses permits at call time', async () => {
    await startMasters();
    const prefix = uniquePrefix('quorum-semaphore');
    const lockModule = () =>
      RedisLockModule.forRoot({
        redis: masters.map((m) => m.url),
        keyPrefix: prefix,
        commandTimeoutMs: COMMAND_TIMEOUT_MS,
      });
    kit.watchKeys(prefix, keysOnMasters);
    const refused = await kit.compile({
      imports: [lockModule()],
      providers: [QuorumReports],
      controllers: [QuorumExports],
    });
    const err = await rejectionOf(refused.init());
    expect(err).toBeInstanceOf(LockConfigError);
    expect(err).toMatchObject({ option: 'redis' });
    expect((err as Error).message).toMatch(
      /^@Semaphore on QuorumExports\.run, QuorumReports\.build: semaphores are not available in quorum mode: .*limit x masters \/ majority.*use one Redis/,
    );

    const started = await kit.compile({ imports: [lockModule()], providers: [QuorumLedger] });
    await started.init();
    expect(await started.get(QuorumLedger).post()).toBe('posted');
    const locks = started.get(LockService);
    const callTime = await rejectionOf(locks.acquirePermit('k', { limit: 2 }));
    expect(callTime).toBeInstanceOf(LockConfigError);
    expect((callTime as Error).message).toMatch(/quorum mode.*limit x masters \/ majority/);
    expect(await keysOnMasters(prefix)).toEqual([]);
  });
});

describe('quorum mode: the redis option', () => {
  const configError = (redis: unknown): LockConfigError => {
    try {
      const engine = new LockEngine({
        redis: redis as string[],
        logger: { warn: () => undefined, error: () => undefined },
      });
      void engine.close();
    } catch (err) {
      expect(err).toBeInstanceOf(LockConfigError);
      expect((err as LockConfigError).option).toBe('redis');
      return err as LockConfigError;
    }
    throw new Error('no LockConfigError');
  };

  it('needs 3 or more masters, an odd number of them', () => {
    expect(configError(['redis://a:1', 'redis://b:1']).message).toMatch(/at least 3 masters, got 2; pass 3, 5 or 7/);
    expect(configError([]).message).toMatch(/at least 3 masters, got 0/);
    expect(configError(['redis://a:1', 'redis://b:1', 'redis://c:1', 'redis://d:1']).message).toMatch(
      /odd number of masters, got 4.*pass 3, 5 or 7/,
    );
  });

  it('rejects the same master given twice, however it is written', () => {
    expect(configError(['redis://a:1', 'redis://b:1', 'redis://a:1']).message).toMatch(
      /entries 0 and 2 are the same master \(a:1\)/,
    );
    expect(configError(['redis://localhost:6379', 'redis://b:1', { host: '127.0.0.1' }]).message).toMatch(
      /entries 0 and 2 are the same master \(127\.0\.0\.1:6379\)/,
    );
    const client = new Redis({ host: 'b', port: 1, lazyConnect: true });
    try {
      expect(configError(['redis://a:1', 'redis://b:1/2', client]).message).toMatch(
        /entries 1 and 2 are the same master \(b:1\)/,
      );
    } finally {
      client.disconnect();
    }
  });

  it('rejects a Cluster and entries that are not connection inputs', () => {
    const cluster = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true });
    try {
      expect(configError(['redis://a:1', cluster, 'redis://c:1']).message).toMatch(
        /entry 1 is a Cluster client; quorum mode takes independent masters/,
      );
    } finally {
      cluster.disconnect();
    }
    expect(configError(['redis://a:1', 'http://b:1', 'redis://c:1']).message).toMatch(
      /entry 1 is not a redis:\/\/ URL/,
    );
    expect(configError(['redis://a:1', 42, 'redis://c:1']).message).toMatch(/entry 1 is not a redis:\/\/ URL/);
  });
});
