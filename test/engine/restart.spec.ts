import { afterEach, describe, expect, it } from '@jest/globals';
import { LockLostError } from '../../lib/errors/lock-lost.error.js';
import type { LockEvents } from '../../lib/locking/events/lock-events.js';
import { LockTestKit, abortedWithin, track } from '../support/lock-test-kit.js';

describe('redis-server restart', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it('a held lock is reported lost (its data is gone), waiters are not stranded, and the engine keeps working', async () => {
    const server = await kit.server();
    const engine = kit.engine({ redis: server.url });
    const lost: LockEvents['lost'][] = [];
    engine.on('lost', (e) => lost.push(e));

    const lock = await engine.acquire('k', { leaseMs: 600, autoExtend: true });
    // Another context waits for it (subscribed to its channel) across the restart.
    const waiter = track(engine.acquire('k', { leaseMs: 600, waitTimeoutMs: 8_000 }));
    await new Promise<void>((r) => setTimeout(r, 100));
    expect(waiter.settled).toBe(false);

    await server.restart();
    const reason = await abortedWithin(lock.signal, 4_000);
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as LockLostError).key).toBe('k');
    expect(lost.map((e) => e.key)).toEqual(['k']);
    expect(lock.isHeld).toBe(false);
    expect(await lock.release()).toBe(false);

    // The waiter gets the lock once the lease it waited on can have run out.
    const second = await waiter.promise;
    expect(second.fencingToken).toBeGreaterThan(0);
    expect((await engine.inspect('k'))?.holders).toHaveLength(1);
    await second.release();

    // New acquisitions on the same engine work, including contended ones woken by pub/sub.
    const third = await engine.acquire('k', { waitTimeoutMs: 2_000 });
    const contended = track(engine.acquire('k', { waitTimeoutMs: 2_000 }));
    await new Promise<void>((r) => setTimeout(r, 50));
    expect(contended.settled).toBe(false);
    await third.release();
    const fourth = await contended.promise;
    expect(fourth.fencingToken).toBeGreaterThan(third.fencingToken);
    await fourth.release();
    expect(await engine.inspect('k')).toBeNull();
  }, 20_000);
});
