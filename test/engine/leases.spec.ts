import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { LockLostError } from '../../lib/errors/lock-lost.error.js';
import { LockNotHeldError } from '../../lib/errors/lock-not-held.error.js';
import type { LockEvents } from '../../lib/locking/events/lock-events.js';
import {
  LockTestKit,
  abortedWithin,
  keysUnder,
  leaseExpiry,
  redisNames,
  rejectionOf,
  sleep,
  track,
  until,
} from '../support/lock-test-kit.js';

/** Redis server time in milliseconds. */
async function redisNowMs(redis: { time(): Promise<[string, string] | (string | number)[]> }): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

describe('leases and the watchdog', () => {
  const kit = new LockTestKit();
  afterEach(async () => {
    jest.useRealTimers();
    await kit.closeAll();
  });

  it('a hold with autoExtend:false frees itself after its lease (Redis time, whatever the client clock says)', async () => {
    // The client's wall clock is an hour behind: a lease computed from it would already have run out.
    jest.useFakeTimers({
      now: Date.now() - 3_600_000,
      doNotFake: [
        'hrtime',
        'nextTick',
        'performance',
        'queueMicrotask',
        'setImmediate',
        'clearImmediate',
        'setInterval',
        'clearInterval',
        'setTimeout',
        'clearTimeout',
      ],
    });
    const engine = kit.engine();
    const other = kit.peer(engine);
    const redis = kit.redis();
    const lost: LockEvents['lost'][] = [];
    engine.on('lost', (e) => lost.push(e));
    const leaseMs = 1_000;

    const redisBefore = await redisNowMs(redis);
    const start = performance.now();
    const lock = await engine.acquire('k', { leaseMs, autoExtend: false });
    const redisAfter = await redisNowMs(redis);
    // The lease expiry Redis keeps is Redis's clock at the acquisition plus leaseMs.
    const expiry = Number(await leaseExpiry(redis, redisNames(engine.settings.keyPrefix, 'k'), lock.token));
    expect(expiry).toBeGreaterThanOrEqual(redisBefore + leaseMs);
    expect(expiry).toBeLessThanOrEqual(redisAfter + leaseMs);
    expect(await other.tryAcquire('k')).toBeNull();
    await sleep(leaseMs / 2);
    expect(await other.tryAcquire('k')).toBeNull();

    const reason = await abortedWithin(lock.signal, leaseMs + 2_000);
    expect(performance.now() - start).toBeGreaterThanOrEqual(leaseMs - 5);
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as LockLostError).key).toBe('k');
    expect((reason as LockLostError).reason).toBe('lease-expired');
    expect(lock.isHeld).toBe(false);
    expect(lost).toHaveLength(1);
    expect(lost[0]).toMatchObject({ key: 'k', mode: 'write', error: reason });

    // Redis freed it too: another engine gets it without waiting out another lease.
    const next = await other.acquire('k', { waitTimeoutMs: 500 });
    expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);
    expect(await lock.release()).toBe(false);
    expect(await engine.inspect('k')).not.toBeNull();
    await next.release();
    expect(await keysUnder(redis, engine.settings.keyPrefix)).toEqual([]);
  });

  it('extend(ms) moves a non-renewed lease, and rejects with LockNotHeldError once it is lost', async () => {
    const engine = kit.engine();
    const other = kit.peer(engine);
    const start = performance.now();
    const lock = await engine.acquire('k', { leaseMs: 1_000, autoExtend: false });
    await sleep(300);
    await lock.extend(1_500);
    await sleep(1_100 - (performance.now() - start)); // past the original lease
    expect(lock.isHeld).toBe(true);
    expect(await other.tryAcquire('k')).toBeNull();
    const remaining = (await engine.inspect('k'))!.holders[0].remainingLeaseMs;
    expect(remaining).toBeGreaterThan(0);
    expect(remaining).toBeLessThanOrEqual(1_500);
    await abortedWithin(lock.signal, 3_000);
    expect(await rejectionOf(lock.extend(600))).toBeInstanceOf(LockNotHeldError);
    // The holder's deadline runs from when it sent the command, so it passes a little before Redis's: Redis then
    // drops the lock by itself, leaving nothing behind.
    const redis = kit.redis();
    await until(
      async () => (await keysUnder(redis, engine.settings.keyPrefix)).length === 0,
      1_000,
      'Redis to drop the expired lock',
    );
  });

  it("a dead reader's lease runs out while another reader keeps renewing its own", async () => {
    const engine = kit.engine();
    const live = kit.peer(engine);
    const writerEngine = kit.peer(engine);
    const leaseMs = 800;
    // The "dead" reader: nothing renews it. The live one is renewed by its engine's watchdog.
    const dead = await engine.acquire('k', { mode: 'read', leaseMs, autoExtend: false });
    const reader = await live.acquire('k', { mode: 'read', leaseMs, autoExtend: true });
    const writer = track(writerEngine.acquire('k', { waitTimeoutMs: 10_000 }));
    await until(async () => (await engine.inspect('k'))?.waitingWriters === 1, 2_000, 'the writer to queue');
    expect((await engine.inspect('k'))?.holders).toHaveLength(2);

    await sleep(leaseMs * 2);
    expect(dead.signal.aborted).toBe(true);
    expect(reader.isHeld).toBe(true);
    const info = await engine.inspect('k');
    expect(info?.holders).toHaveLength(1);
    expect(info?.holders[0].fencingToken).toBe(reader.fencingToken);
    expect(writer.settled).toBe(false);

    const releasedAt = performance.now();
    await reader.release();
    const w = await writer.promise;
    expect(writer.at! - releasedAt).toBeLessThan(500);
    await w.release();
  });

  it('the watchdog keeps a lock well beyond its lease while held, and only autoExtend holds', async () => {
    const engine = kit.engine();
    const other = kit.peer(engine);
    const leaseMs = 500;
    const kept = await engine.acquire('kept', { leaseMs, autoExtend: true });
    const dropped = await engine.acquire('dropped', { leaseMs, autoExtend: false });
    const end = performance.now() + 4 * leaseMs;
    while (performance.now() < end) {
      expect(await other.tryAcquire('kept')).toBeNull();
      await sleep(100);
    }
    expect(kept.isHeld).toBe(true);
    expect(kept.signal.aborted).toBe(false);
    const info = await engine.inspect('kept');
    expect(info?.holders[0].remainingLeaseMs).toBeLessThanOrEqual(leaseMs);
    expect(info?.holders[0].remainingLeaseMs).toBeGreaterThan(0);
    expect(dropped.signal.aborted).toBe(true);
    expect(await engine.inspect('dropped')).toBeNull();
    expect(engine.heldCount).toBe(1);
    expect(await kept.release()).toBe(true);
    expect(engine.heldCount).toBe(0);
  });
});
