import { afterEach, describe, expect, it } from '@jest/globals';
import { LockTestKit, keysUnder } from '../support/lock-test-kit.js';

/** `await using` on a lock or a permit: released when the block ends, also when it throws; a second dispose is quiet. */
describe('handles are async-disposable', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it('a lock is released at the end of its block, also when the block throws', async () => {
    const engine = kit.engine();
    {
      await using lock = await engine.acquire('dispose:1');
      expect(lock.isHeld).toBe(true);
      expect(await engine.tryAcquire('dispose:1')).toBeNull();
    }
    const next = await engine.tryAcquire('dispose:1');
    expect(next).not.toBeNull();
    await next?.release();

    const fails = async () => {
      await using lock = await engine.acquire('dispose:2');
      expect(lock.isHeld).toBe(true);
      throw new Error('the work failed');
    };
    await expect(fails()).rejects.toThrow('the work failed');
    expect(await engine.inspect('dispose:2')).toBeNull();
    expect(await keysUnder(kit.redis(), engine.settings.keyPrefix)).toEqual([]);
  });

  it('disposing a handle released already, or lost, resolves quietly', async () => {
    const engine = kit.engine();
    const released = await engine.acquire('dispose:3');
    await released.release();
    await expect(released[Symbol.asyncDispose]()).resolves.toBeUndefined();
    const lost = await engine.acquire('dispose:4', { leaseMs: 1_000 });
    await engine.forceRelease('dispose:4');
    await expect(lost[Symbol.asyncDispose]()).resolves.toBeUndefined();
    expect(lost.isHeld).toBe(false);
  });

  it('a permit is given back at the end of its block', async () => {
    const engine = kit.engine();
    {
      await using permit = await engine.acquirePermit('dispose:pool', { limit: 1 });
      expect(permit.isHeld).toBe(true);
      expect(await engine.tryAcquirePermit('dispose:pool', { limit: 1 })).toBeNull();
    }
    const again = await engine.tryAcquirePermit('dispose:pool', { limit: 1 });
    expect(again).not.toBeNull();
    await again?.release();
  });
});
