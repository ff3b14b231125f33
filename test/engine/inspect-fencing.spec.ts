import { hostname } from 'node:os';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { LockEvents } from '../../lib/locking/events/lock-events.js';
import { LockTestKit, deferred, redisNames, track, until } from '../support/lock-test-kit.js';

describe('inspect', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it('describes a write hold: mode, holder identity, hold count, lease, waiters, fencing token', async () => {
    const engine = kit.engine({ appName: 'inspect-test' });
    const other = kit.peer(engine);
    const acquired: LockEvents['acquired'][] = [];
    engine.on('acquired', (e) => acquired.push(e));
    expect(await engine.inspect('k')).toBeNull();

    const inside = deferred();
    const leave = deferred();
    const before = Date.now();
    const holding = engine.withLock(
      'k',
      (outer) =>
        engine.withLock(
          'k',
          async () => {
            inside.resolve();
            await leave.promise;
            return outer.fencingToken;
          },
          { leaseMs: 5_000 },
        ),
      { leaseMs: 5_000 },
    );
    await inside.promise;
    const writer = track(other.acquire('k', { waitTimeoutMs: 5_000 }));
    const reader = track(other.acquire('k', { mode: 'read', waitTimeoutMs: 5_000 }));
    await until(async () => (await engine.inspect('k'))?.waiting === 2, 2_000, 'two waiters');

    const info = await engine.inspect('k');
    expect(info).toMatchObject({ key: 'k', mode: 'write', waiting: 2, waitingWriters: 1, waitingReaders: 1 });
    expect(info?.holders).toHaveLength(1);
    const [holder] = info!.holders;
    expect(holder).toMatchObject({
      mode: 'write',
      owner: acquired[0].owner,
      host: hostname(),
      pid: process.pid,
      app: 'inspect-test',
      holdCount: 2,
      fencingToken: acquired[0].fencingToken,
    });
    expect(acquired[0].owner.startsWith(`${engine.instanceId}:`)).toBe(true);
    expect(holder.remainingLeaseMs).toBeGreaterThan(4_000);
    expect(holder.remainingLeaseMs).toBeLessThanOrEqual(5_000);
    expect(holder.since.getTime()).toBeGreaterThanOrEqual(before - 1_000);
    expect(holder.since.getTime()).toBeLessThanOrEqual(Date.now() + 1_000);
    expect(info?.fencingToken).toBe(acquired[0].fencingToken);

    leave.resolve();
    expect(await holding).toBe(acquired[0].fencingToken);
    const w = await writer.promise;
    const writerInfo = await other.inspect('k');
    expect(writerInfo?.holders[0].holdCount).toBe(1);
    expect(writerInfo?.holders[0].owner).not.toBe(acquired[0].owner);
    expect(writerInfo?.fencingToken).toBe(w.fencingToken);
    expect(writerInfo?.waitingReaders).toBe(1);
    await w.release();
    await (await reader.promise).release();
  });

  it('describes a read hold: every reader, its own hold count and lease', async () => {
    const engine = kit.engine();
    const owners: string[] = [];
    engine.on('acquired', (e) => owners.push(e.owner));
    const r1 = await engine.acquire('k', { mode: 'read', leaseMs: 3_000 });
    const inner = deferred();
    const leave = deferred();
    const r2 = engine.withLock(
      'k',
      () =>
        engine.withLock(
          'k',
          async () => {
            inner.resolve();
            await leave.promise;
          },
          { mode: 'read' },
        ),
      { mode: 'read', leaseMs: 8_000 },
    );
    await inner.promise;
    const info = await engine.inspect('k');
    expect(info?.mode).toBe('read');
    expect(info?.waiting).toBe(0);
    const byOwner = new Map(info!.holders.map((h) => [h.owner, h]));
    expect([...byOwner.keys()].sort()).toEqual([owners[0], owners[1]].sort());
    expect(byOwner.get(owners[0])).toMatchObject({
      mode: 'read',
      holdCount: 1,
      pid: process.pid,
      fencingToken: r1.fencingToken,
    });
    expect(byOwner.get(owners[1])).toMatchObject({ mode: 'read', holdCount: 2, pid: process.pid });
    expect(byOwner.get(owners[0])!.remainingLeaseMs).toBeLessThanOrEqual(3_000);
    expect(byOwner.get(owners[1])!.remainingLeaseMs).toBeGreaterThan(3_000);
    expect(info?.fencingToken).toBe(Math.max(...info!.holders.map((h) => h.fencingToken)));
    leave.resolve();
    await r2;
    await r1.release();
    expect(await engine.inspect('k')).toBeNull();
  });
});

describe('fencing tokens', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it('strictly increase across successive holds, modes, engines, and after the lock key was deleted', async () => {
    const engine = kit.engine();
    const other = kit.peer(engine);
    const redis = kit.redis();
    const names = redisNames(engine.settings.keyPrefix, 'k');
    const tokens: number[] = [];
    for (let i = 0; i < 8; i++) {
      const e = i % 2 ? other : engine;
      const lock = await e.acquire('k', { mode: i % 3 === 0 ? 'read' : 'write' });
      tokens.push(lock.fencingToken);
      if (i === 2) {
        // The key vanishes behind the holder's back (eviction, FLUSHDB, an operator). A sole holder's lock is one
        // key: its state hash, whose expiry is the lease (single-holder form).
        expect(await redis.del(names.state, names.leases)).toBe(1);
        await lock.release();
      } else if (i === 5) {
        await other.forceRelease('k');
      } else {
        await lock.release();
      }
    }
    // Concurrent readers each get their own, larger token.
    const readers = await Promise.all([engine, other, engine].map((e) => e.acquire('k', { mode: 'read' })));
    tokens.push(...readers.map((r) => r.fencingToken).sort((a, b) => a - b));
    expect(new Set(readers.map((r) => r.fencingToken)).size).toBe(3);
    for (const r of readers) await r.release();
    const last = await other.acquire('k');
    tokens.push(last.fencingToken);
    await last.release();

    for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]);
    expect(tokens.every((t) => Number.isSafeInteger(t) && t > 0)).toBe(true);
  });
});
