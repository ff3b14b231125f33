import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { LockAcquireTimeoutError } from '../../lib/errors/lock-acquire-timeout.error.js';
import { LockError } from '../../lib/errors/lock.error.js';
import { LockEngine } from '../../lib/locking/engine/lock-engine.js';
import type { LockEvents } from '../../lib/locking/events/lock-events.js';
import { ACQUIRE } from '../../lib/redis/scripts/lock-scripts.js';
import type { LockHandle } from '../../lib/types/lock.types.js';
import {
  LockTestKit,
  keysUnder,
  redisNames,
  redisUrl,
  rejectionOf,
  sleep,
  track,
  until,
} from '../support/lock-test-kit.js';
import { RedisProxy } from '../support/redis-proxy.js';

describe('waiting', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it('gives up after waitTimeoutMs with LockAcquireTimeoutError (key, waitedMs) and leaves no waiter entry', async () => {
    const engine = kit.engine();
    const other = kit.peer(engine);
    const redis = kit.redis();
    const names = redisNames(engine.settings.keyPrefix, 'k');
    const timeouts: LockEvents['timeout'][] = [];
    other.on('timeout', (e) => timeouts.push(e));
    const lock = await engine.acquire('k', { leaseMs: 5_000 });

    for (const mode of ['write', 'read'] as const) {
      const started = performance.now();
      const err = await rejectionOf(other.acquire('k', { mode, waitTimeoutMs: 300 }));
      const elapsed = performance.now() - started;
      expect(err).toBeInstanceOf(LockAcquireTimeoutError);
      expect(err).toBeInstanceOf(LockError);
      const e = err as LockAcquireTimeoutError;
      expect(e).toMatchObject({ key: 'k', keys: ['k'], mode, waitTimeoutMs: 300 });
      expect(e.waitedMs).toBeGreaterThanOrEqual(300);
      expect(e.waitedMs).toBeLessThanOrEqual(elapsed);
      expect(e.message).toContain('"k"');
      expect(elapsed).toBeLessThan(1_500); // not the 5 s lease
      expect(await keysUnder(redis, engine.settings.keyPrefix)).toEqual([names.state, names.leases].sort());
    }
    expect(timeouts.map((t) => t.mode)).toEqual(['write', 'read']);

    // waitTimeoutMs 0 tries once.
    const zero = await rejectionOf(other.acquire('k', { waitTimeoutMs: 0 }));
    expect(zero).toBeInstanceOf(LockAcquireTimeoutError);
    expect((zero as LockAcquireTimeoutError).waitedMs).toBeLessThan(200);
    expect((await engine.inspect('k'))?.waiting).toBe(0);
    await lock.release();
  });

  it('an AbortSignal cancels waiting with signal.reason and leaves no :wq/:rq entry in Redis', async () => {
    const engine = kit.engine();
    const other = kit.peer(engine);
    const redis = kit.redis();
    const names = redisNames(engine.settings.keyPrefix, 'k');
    const lock = await engine.acquire('k', { leaseMs: 5_000 });

    for (const mode of ['write', 'read'] as const) {
      const controller = new AbortController();
      const reason = new Error(`caller gave up (${mode})`);
      const waiting = track(other.acquire('k', { mode, waitTimeoutMs: 5_000, signal: controller.signal }));
      const queue = mode === 'write' ? names.writers : names.readers;
      await until(async () => (await redis.zcard(queue)) === 1, 2_000, `the ${mode} waiter to register`);
      await sleep(50);
      expect(waiting.settled).toBe(false);
      const abortedAt = performance.now();
      controller.abort(reason);
      expect(await rejectionOf(waiting.promise)).toBe(reason);
      expect(waiting.at! - abortedAt).toBeLessThan(500);
      const left = await keysUnder(redis, engine.settings.keyPrefix);
      expect(left).not.toContain(names.writers);
      expect(left).not.toContain(names.readers);
      expect((await engine.inspect('k'))?.waiting).toBe(0);
    }

    // An already aborted signal rejects before any attempt.
    const controller = new AbortController();
    controller.abort('stop');
    expect(await rejectionOf(other.acquire('free-key', { signal: controller.signal }))).toBe('stop');
    expect(await other.inspect('free-key')).toBeNull();

    // The writer that gave up left no registration behind to hold readers back (writer preference).
    await lock.release();
    const reader = await other.acquire('k', { mode: 'read', waitTimeoutMs: 0 });
    await reader.release();
  });

  it('an abort while the waiter waits for its wake-up subscription rejects at once, and no attempt follows it', async () => {
    const holder = kit.engine();
    const redis = kit.redis();
    const names = redisNames(holder.settings.keyPrefix, 'k');
    // The waiter's connections go through a proxy that holds back its SUBSCRIBE: the waiter, refused and registered,
    // then waits for its subscription (up to commandTimeoutMs) before its next attempt.
    const proxy = await RedisProxy.start(redisUrl());
    kit.add(() => proxy.close());
    const waiter = new LockEngine({ redis: proxy.url, keyPrefix: holder.settings.keyPrefix, logger: kit.logger });
    kit.add(() => waiter.close());
    const lock = await holder.acquire('k', { leaseMs: 10_000 });
    const subscribing = proxy.holdWhen(/subscribe/i);
    const controller = new AbortController();
    const reason = new Error('caller gave up');
    const waiting = track(waiter.acquire('k', { waitTimeoutMs: 5_000, signal: controller.signal }));
    await subscribing.matched;
    expect(await redis.zcard(names.writers)).toBe(1);
    // The lock is free when the caller gives up: an attempt sent after the abort would be granted.
    await lock.release();
    const abortedAt = performance.now();
    controller.abort(reason);
    expect(await rejectionOf(waiting.promise)).toBe(reason);
    expect(waiting.at! - abortedAt).toBeLessThan(500);
    proxy.release();
    expect(await holder.inspect('k')).toBeNull();
    expect(await keysUnder(redis, holder.settings.keyPrefix)).toEqual([]);
  });

  it('an abort during the first attempt rejects once that attempt is answered, without waiting for the subscription', async () => {
    const holder = kit.engine();
    const redis = kit.redis();
    const names = redisNames(holder.settings.keyPrefix, 'k');
    const proxy = await RedisProxy.start(redisUrl());
    kit.add(() => proxy.close());
    const waiter = new LockEngine({ redis: proxy.url, keyPrefix: holder.settings.keyPrefix, logger: kit.logger });
    kit.add(() => waiter.close());
    const lock = await holder.acquire('k', { leaseMs: 10_000 });
    // The waiter's first attempt is held back on its way to Redis, and so will be its SUBSCRIBE.
    const subscribing = proxy.holdWhen(/subscribe/i);
    const attempting = proxy.holdWhen(new RegExp(ACQUIRE.sha));
    const controller = new AbortController();
    const reason = new Error('caller gave up');
    const waiting = track(waiter.acquire('k', { waitTimeoutMs: 5_000, signal: controller.signal }));
    await attempting.matched;
    controller.abort(reason);
    // Refused (the lock is held): the caller, who gave up meanwhile, is told at once, not after the subscription's
    // bound (commandTimeoutMs).
    const answeredAt = performance.now();
    attempting.release();
    expect(await rejectionOf(waiting.promise)).toBe(reason);
    expect(waiting.at! - answeredAt).toBeLessThan(500);
    expect(await redis.zcard(names.writers)).toBe(0);
    subscribing.release();
    await lock.release();
    expect(await keysUnder(redis, holder.settings.keyPrefix)).toEqual([]);
  });

  it('a release wakes exactly one of several waiting writers, each in turn', async () => {
    const engine = kit.engine();
    const engines = [engine, kit.peer(engine), kit.peer(engine)];
    const holder = await engine.acquire('k', { leaseMs: 10_000 });
    const acquired: LockHandle[] = [];
    const waiters = Array.from({ length: 6 }, (_, i) =>
      engines[i % 3].acquire('k', { leaseMs: 10_000, waitTimeoutMs: 10_000 }).then((h) => {
        acquired.push(h);
        return h;
      }),
    );
    await until(async () => (await engine.inspect('k'))?.waitingWriters === 6, 2_000, '6 writers to queue');

    let current = holder;
    for (let left = 6; left > 0; left--) {
      const releasedAt = performance.now();
      const before = acquired.length;
      await current.release();
      await until(() => acquired.length > before, 1_000, 'the next writer');
      // Promptly (10 s leases: only a wake-up explains it), and only one.
      expect(performance.now() - releasedAt).toBeLessThan(1_000);
      await sleep(50);
      expect(acquired.length).toBe(before + 1);
      const info = await engine.inspect('k');
      expect(info?.holders).toHaveLength(1);
      expect(info?.waitingWriters).toBe(left - 1);
      current = acquired[acquired.length - 1];
    }
    await current.release();
    await Promise.all(waiters);
  });

  it('a release that lands while the waiter is still subscribing is not missed', async () => {
    const engine = kit.engine();
    const waiter = kit.peer(engine);
    let current: LockHandle | undefined;
    // Release the moment the waiter's first attempt has failed, racing its SUBSCRIBE.
    waiter.on('contended', () => {
      void current?.release();
    });
    for (let i = 0; i < 10; i++) {
      const key = `race${i}`; // a fresh channel each time: no subscription is already live
      current = await engine.acquire(key, { leaseMs: 10_000 });
      const started = performance.now();
      const next = await waiter.acquire(key, { waitTimeoutMs: 3_000 });
      // Not the 10 s lease: the waiter saw the release.
      expect(performance.now() - started).toBeLessThan(1_000);
      current = undefined;
      await next.release();
    }
  });

  it("on a client passed with ioredis' own keyPrefix, the keys get that prefix and a release still wakes the waiter", async () => {
    const clients = ['a', 'b'].map(() => new Redis(redisUrl(), { keyPrefix: 'app:' }));
    kit.add(async () => clients.forEach((c) => c.disconnect()));
    const engine = kit.engine({ redis: clients[0] });
    const other = kit.peer(engine, { redis: clients[1] });
    const redis = kit.redis();
    const names = redisNames(engine.settings.keyPrefix, 'k');
    const lock = await engine.acquire('k', { leaseMs: 10_000 });
    expect(await redis.exists(`app:${names.state}`)).toBe(1);
    const waiting = track(other.acquire('k', { waitTimeoutMs: 5_000 }));
    await until(async () => (await redis.zcard(`app:${names.writers}`)) === 1, 2_000, 'the waiter to register');
    const released = performance.now();
    await lock.release();
    const next = await waiting.promise;
    // Woken by the release, not by its 5 s wait running out (nor the 10 s lease).
    expect(performance.now() - released).toBeLessThan(1_000);
    await next.release();
    expect(await keysUnder(redis, `app:${engine.settings.keyPrefix}`)).toEqual([]);
  });

  it('a waiter that is not woken still retries when the blocking lease can have run out', async () => {
    const engine = kit.engine();
    const other = kit.peer(engine);
    // The holder's lease runs out without any release, so no wake-up message is ever sent.
    const lock = await engine.acquire('k', { leaseMs: 400, autoExtend: false });
    const started = performance.now();
    const next = await other.acquire('k', { waitTimeoutMs: 3_000 });
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThan(300);
    expect(waited).toBeLessThan(1_500);
    expect(lock.signal.aborted).toBe(true);
    await next.release();
  });
  /** The connections a proxy carries, as Redis lists them: id, and how many channels each has subscribed. */
  async function clientsThrough(redis: Redis, proxy: RedisProxy): Promise<{ id: string; subscriptions: number }[]> {
    const ports = proxy.upstreamPorts();
    const list = (await redis.client('LIST')) as string;
    return list
      .split('\n')
      .filter(Boolean)
      .map((line) => Object.fromEntries(line.split(' ').map((field) => field.split('=', 2))) as Record<string, string>)
      .filter((c) => ports.has(Number(c.addr.split(':').pop())))
      .map((c) => ({ id: c.id, subscriptions: Number(c.sub ?? 0) + Number(c.ssub ?? 0) }));
  }

  for (const given of ['a URL', 'an ioredis client of its own'] as const) {
    it(`after an outage the waiters re-check once the command connection is back, not before (a re-check sent before fails a waiter with time left): redis given as ${given}`, async () => {
      const holder = kit.engine();
      const redis = kit.redis();
      const proxy = await RedisProxy.start(redisUrl());
      kit.add(() => proxy.close());
      let connection: string | Redis = proxy.url;
      if (given !== 'a URL') {
        const client = new Redis(proxy.url);
        kit.add(async () => client.disconnect());
        connection = client;
      }
      const waiter = new LockEngine({
        redis: connection,
        keyPrefix: holder.settings.keyPrefix,
        commandTimeoutMs: 500,
        logger: kit.logger,
      });
      kit.add(() => waiter.close());
      // The application's client: its closes are watched, its errors left to the application's own listeners.
      if (typeof connection !== 'string') expect(connection.listenerCount('error')).toBe(0);
      const lock = await holder.acquire('k', { leaseMs: 30_000 });
      const waiting = track(waiter.acquire('k', { waitTimeoutMs: 20_000 }));
      await until(
        async () => (await clientsThrough(redis, proxy)).some((c) => c.subscriptions > 0),
        5_000,
        'the waiter to listen',
      );
      expect((await holder.inspect('k'))?.waitingWriters).toBe(1);

      // The command connection drops and cannot come back: its new connection's handshake is held at the proxy.
      const handshake = proxy.holdWhen(/info/i);
      kit.add(async () => handshake.release());
      const command = (await clientsThrough(redis, proxy)).find((c) => c.subscriptions === 0)!;
      await redis.client('KILL', 'ID', command.id);
      await handshake.matched;
      handshake.stopMatching();
      // Then the wake-up connection drops and is back at once (it subscribes again).
      const subscriber = (await clientsThrough(redis, proxy)).find((c) => c.subscriptions > 0)!;
      await redis.client('KILL', 'ID', subscriber.id);
      await until(
        async () => (await clientsThrough(redis, proxy)).some((c) => c.subscriptions > 0 && c.id !== subscriber.id),
        5_000,
        'the wake-up connection to subscribe again',
      );
      // Longer than commandTimeoutMs: a re-check sent on the command connection now would have failed the waiter.
      await sleep(1_200);
      expect(waiting.settled).toBe(false);

      // The command connection back: the waiter re-checks (still refused), and a release hands the lock over.
      handshake.release();
      await until(async () => (await waiter.ping(500)).command, 5_000, 'the command connection to be back');
      await sleep(300);
      expect(waiting.settled).toBe(false);
      const releasedAt = performance.now();
      await lock.release();
      const handle = await waiting.promise;
      expect(waiting.at! - releasedAt).toBeLessThan(1_000);
      expect(await handle.release()).toBe(true);
    });
  }
});
