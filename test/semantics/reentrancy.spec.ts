import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from '@jest/globals';
import { LockUpgradeError } from '../../lib/errors/lock-upgrade.error.js';
import type { LockEngine } from '../../lib/locking/engine/lock-engine.js';
import { deferred, rejectionOf, until } from '../support/lock-test-kit.js';
import { LockWorlds, STORE_KINDS } from './lock-worlds.js';

/** The hold count of the (single) holder of `key`, as the store reports it. */
async function holdCount(engine: LockEngine, key: string): Promise<number | undefined> {
  return (await engine.inspect(key))?.holders[0]?.holdCount;
}

describe.each(STORE_KINDS)('reentrancy (%s store)', (kind) => {
  const worlds = new LockWorlds(kind);
  afterEach(() => worlds.closeAll());

  it('nested withLock in one async context re-enters, counting levels in the store; other owners stay out', async () => {
    const a = worlds.engine();
    const b = worlds.engine();
    const inside = deferred();
    const leave = deferred();
    const counts: (number | undefined)[] = [];
    const outer = a.withLock('k', async (lock) => {
      expect(lock.reentrant).toBe(false);
      counts.push(await holdCount(a, 'k'));
      await a.withLock('k', async (inner) => {
        expect(inner.reentrant).toBe(true);
        expect(inner.token).toBe(lock.token);
        expect(inner.fencingToken).toBe(lock.fencingToken);
        counts.push(await holdCount(a, 'k'));
        await a.withLock('k', async () => counts.push(await holdCount(a, 'k')), { waitTimeoutMs: 0 });
        counts.push(await holdCount(a, 'k'));
        inside.resolve();
        await leave.promise;
      });
      counts.push(await holdCount(a, 'k'));
      return 'done';
    });
    await inside.promise;
    expect(counts).toEqual([1, 2, 3, 2]);
    // Calls outside that context are other owners, on either engine.
    expect(await b.tryAcquire('k')).toBeNull();
    expect(await a.tryAcquire('k')).toBeNull();
    expect(await a.tryAcquire('k', { mode: 'read' })).toBeNull();
    leave.resolve();
    expect(await outer).toBe('done');
    expect(counts).toEqual([1, 2, 3, 2, 1]);
    expect(await a.inspect('k')).toBeNull();
  });

  it('downgrade: a write owner may take the read lock; when its write hold ends, a waiting reader gets in at once', async () => {
    const a = worlds.engine();
    const b = worlds.engine();
    const leaseMs = 10_000;
    const readHeld = deferred();
    const readerIn = deferred();
    let writeEndedAt = 0;
    const seen: unknown[] = [];
    const owner = a.withLock(
      'k',
      async (write) => {
        const read = await a.acquire('k', { mode: 'read', leaseMs, waitTimeoutMs: 0 });
        const both = await a.inspect('k');
        seen.push(both?.mode, both?.holders.map((h) => h.mode).sort());
        readHeld.resolve();
        await until(async () => (await a.inspect('k'))?.waitingReaders === 1, 2_000, 'the other reader to wait');
        writeEndedAt = performance.now();
        await write.release();
        seen.push((await a.inspect('k'))?.mode);
        await readerIn.promise;
        await read.release();
      },
      { leaseMs },
    );
    await readHeld.promise;
    const reader = await b.acquire('k', { mode: 'read', waitTimeoutMs: 5_000 });
    const wokenAfter = performance.now() - writeEndedAt;
    readerIn.resolve();
    await owner;
    expect(seen).toEqual(['write', ['read', 'write'], 'read']);
    // Woken by the end of the write hold, not by a lease running out (10 s).
    expect(wokenAfter).toBeLessThan(500);
    await reader.release();
  });

  it('upgrade: a read owner asking for the write lock is rejected at once with LockUpgradeError', async () => {
    const a = worlds.engine();
    const started = performance.now();
    const err = await a.withReadLock('k', () => rejectionOf(a.acquire('k', { waitTimeoutMs: 5_000 })));
    expect(err).toBeInstanceOf(LockUpgradeError);
    expect((err as LockUpgradeError).key).toBe('k');
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(await a.inspect('k')).toBeNull();
  });
});
