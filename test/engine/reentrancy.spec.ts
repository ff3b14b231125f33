import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from '@jest/globals';
import { LockError } from '../../lib/errors/lock.error.js';
import { LockUpgradeError } from '../../lib/errors/lock-upgrade.error.js';
import { ownerStorage } from '../../lib/locking/holds/owner-context.js';
import { LockTestKit, deferred, keysUnder, rejectionOf, sleep, track, until } from '../support/lock-test-kit.js';

describe('reentrancy (owner = async context)', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it('nested withLock in the same context re-enters, with the hold count in Redis; another context waits', async () => {
    const engine = kit.engine();
    const redis = kit.redis();
    const inside = deferred();
    const leave = deferred();
    const counts: number[] = [];
    const outer = engine.withLock('k', async (lock) => {
      expect(lock.reentrant).toBe(false);
      counts.push((await engine.inspect('k'))!.holders[0].holdCount);
      await engine.withLock('k', async (inner) => {
        expect(inner.reentrant).toBe(true);
        expect(inner.token).toBe(lock.token);
        expect(inner.fencingToken).toBe(lock.fencingToken);
        counts.push((await engine.inspect('k'))!.holders[0].holdCount);
        // A third level, after an await and a timer: still the same context.
        await sleep(5);
        await engine.withLock('k', async () => counts.push((await engine.inspect('k'))!.holders[0].holdCount), {
          waitTimeoutMs: 0,
        });
        counts.push((await engine.inspect('k'))!.holders[0].holdCount);
        inside.resolve();
        await leave.promise;
      });
      counts.push((await engine.inspect('k'))!.holders[0].holdCount);
      return 'done';
    });
    await inside.promise;
    expect(counts).toEqual([1, 2, 3, 2]);

    // A call outside that context is another owner: it does not re-enter, it waits.
    const stranger = track(engine.withLock('k', async (lock) => lock.reentrant, { waitTimeoutMs: 5_000 }));
    await until(async () => (await engine.inspect('k'))?.waitingWriters === 1, 2_000, 'the other context to queue');
    await sleep(100);
    expect(stranger.settled).toBe(false);
    expect((await engine.inspect('k'))?.holders).toHaveLength(1);

    leave.resolve();
    expect(await outer).toBe('done');
    expect(counts).toEqual([1, 2, 3, 2, 1]);
    expect(await stranger.promise).toBe(false);
    expect(await keysUnder(redis, engine.settings.keyPrefix)).toEqual([]);
  });

  it('parallel branches of one context re-enter instead of blocking each other', async () => {
    const engine = kit.engine();
    const result = await engine.withLock('k', async () => {
      const branches = await Promise.all(
        [1, 2, 3].map((n) =>
          engine.withLock(
            'k',
            async (lock) => {
              await sleep(20);
              return [n, lock.reentrant, (await engine.inspect('k'))!.holders.length] as const;
            },
            { waitTimeoutMs: 1_000 },
          ),
        ),
      );
      return { branches, count: (await engine.inspect('k'))!.holders[0].holdCount };
    });
    expect(result.branches).toEqual([
      [1, true, 1],
      [2, true, 1],
      [3, true, 1],
    ]);
    expect(result.count).toBe(1);
    expect(await engine.inspect('k')).toBeNull();
  });

  it('downgrade: a write owner takes the read lock; when the write hold ends, a waiting reader gets in at once', async () => {
    const engine = kit.engine();
    const other = kit.peer(engine);
    const leaseMs = 10_000;
    const readHeld = deferred();
    const readerIn = deferred<number>();
    let writeEndedAt = 0;
    let modeWhileBoth = '';
    let modeAfterWrite = '';

    const owner = engine.runInOwnerScope(async () => {
      const write = await engine.acquire('k', { leaseMs });
      const read = await engine.acquire('k', { mode: 'read', leaseMs, waitTimeoutMs: 0 });
      expect(read.reentrant).toBe(false);
      modeWhileBoth = (await engine.inspect('k'))!.mode;
      readHeld.resolve();
      await until(async () => (await engine.inspect('k'))?.waitingReaders === 1, 2_000, 'the other reader to queue');
      writeEndedAt = performance.now();
      await write.release();
      modeAfterWrite = (await engine.inspect('k'))?.mode ?? 'none';
      await readerIn.promise;
      await read.release();
    });

    await readHeld.promise;
    expect(modeWhileBoth).toBe('write');
    const reader = await other.acquire('k', { mode: 'read', waitTimeoutMs: 5_000 });
    readerIn.resolve(performance.now());
    await owner;
    // Woken by the write release, not by a lease running out (10 s).
    expect((await readerIn.promise) - writeEndedAt).toBeLessThan(500);
    expect(modeAfterWrite).toBe('read');
    const info = await engine.inspect('k');
    expect(info?.holders).toHaveLength(1);
    await reader.release();
    expect(await engine.inspect('k')).toBeNull();
  });

  it('two engines in one process: a context nesting both takes each engine its own lock', async () => {
    const first = kit.engine();
    const second = kit.engine(); // another key prefix: its "k" is another lock
    const secondsPeer = kit.peer(second);
    const lost: string[] = [];
    first.on('lost', (e) => lost.push(e.key));
    second.on('lost', (e) => lost.push(e.key));
    const seen = await first.withLock('k', async (outer) => {
      const inner = await second.withLock('k', async () => ({
        firstHolders: (await first.inspect('k'))?.holders.map((h) => h.holdCount),
        secondHolders: (await second.inspect('k'))?.holders.map((h) => h.holdCount),
        // Another owner (outside this context) using the second prefix must be kept out.
        intruder: (await ownerStorage().exit(() => secondsPeer.tryAcquire('k')))?.token ?? null,
      }));
      return { ...inner, firstAfter: (await first.inspect('k'))?.holders.length, outerHeld: outer.isHeld };
    });
    expect(seen).toEqual({ firstHolders: [1], secondHolders: [1], intruder: null, firstAfter: 1, outerHeld: true });
    expect(lost).toEqual([]);
    expect(await first.inspect('k')).toBeNull();
  });

  it('two engines on one prefix: nesting them in one context counts and releases the shared hold exactly', async () => {
    const first = kit.engine();
    const second = kit.peer(first);
    // The two engines have sent different numbers of commands before.
    for (let i = 0; i < 5; i++) await (await second.acquire('warm-up')).release();
    const counts = await first.withLock('k', async () => {
      const inner = await second.withLock('k', async () => (await first.inspect('k'))!.holders.map((h) => h.holdCount));
      return [...inner, ...(await first.inspect('k'))!.holders.map((h) => h.holdCount)];
    });
    expect(counts).toEqual([2, 1]);
    // Released in Redis, not left to run out its 30 s lease.
    expect(await first.inspect('k')).toBeNull();
    const after = await second.tryAcquire('k');
    expect(after?.isHeld).toBe(true);
    await after?.release();
  });

  it('upgrade: a read owner asking for the write lock is rejected at once with LockUpgradeError', async () => {
    const engine = kit.engine();
    const started = deferred<number>();
    const err = await engine.withLock(
      'k',
      async () => {
        started.resolve(performance.now());
        return rejectionOf(engine.withLock('k', async () => 'never', { waitTimeoutMs: 5_000 }));
      },
      { mode: 'read' },
    );
    expect(performance.now() - (await started.promise)).toBeLessThan(1_000);
    expect(err).toBeInstanceOf(LockUpgradeError);
    expect(err).toBeInstanceOf(LockError);
    expect((err as LockUpgradeError).key).toBe('k');

    // The read hold was not disturbed, and the rejected call left nothing behind.
    const again = await engine.withLock(
      'k',
      async () => {
        const failed = await rejectionOf(engine.acquire('k', { waitTimeoutMs: 5_000 }));
        const info = await engine.inspect('k');
        return {
          failed,
          holders: info?.holders.length,
          mode: info?.mode,
          waiting: info?.waiting,
          count: info?.holders[0].holdCount,
        };
      },
      { mode: 'read' },
    );
    expect(again.failed).toBeInstanceOf(LockUpgradeError);
    expect(again).toMatchObject({ holders: 1, mode: 'read', waiting: 0, count: 1 });
    expect(await engine.inspect('k')).toBeNull();
  });
});
