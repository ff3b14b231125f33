import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from '@jest/globals';
import { LockLostError } from '../../lib/errors/lock-lost.error.js';
import type { LockEvents } from '../../lib/locking/events/lock-events.js';
import { ACQUIRE } from '../../lib/redis/scripts/lock-scripts.js';
import { LockTestKit, abortedWithin, commandStats, deferred, keysUnder, sleep } from '../support/lock-test-kit.js';

describe('release by token, forced release, retried commands', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it('release(key, wrongToken) returns false and the lock stays held', async () => {
    const engine = kit.engine();
    const other = kit.peer(engine);
    const lock = await engine.acquire('k', { leaseMs: 600 });
    expect(await other.release('k', randomBytes(16).toString('hex'))).toBe(false);
    expect(await engine.release('k', randomBytes(16).toString('hex'))).toBe(false);
    // The token of another key does not open this one.
    const elsewhere = await engine.acquire('j');
    expect(await other.release('k', elsewhere.token)).toBe(false);
    expect(await other.tryAcquire('k')).toBeNull();
    await sleep(400); // past a renewal: the holder still has it
    expect(lock.isHeld).toBe(true);
    expect(lock.signal.aborted).toBe(false);
    expect((await engine.inspect('k'))?.holders).toHaveLength(1);
    expect(await lock.release()).toBe(true);
    expect(await elsewhere.release()).toBe(true);
  });

  it('release(key, token) from another engine instance frees the lock; the holder finds out at its next renewal', async () => {
    const engine = kit.engine();
    const other = kit.peer(engine);
    const third = kit.peer(engine);
    const lost: LockEvents['lost'][] = [];
    engine.on('lost', (e) => lost.push(e));
    const lock = await engine.acquire('k', { leaseMs: 600 });
    expect(await other.release('k', lock.token)).toBe(true);
    expect(await engine.inspect('k')).toBeNull();
    const next = await third.acquire('k', { waitTimeoutMs: 0 });
    const reason = await abortedWithin(lock.signal, 600);
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as LockLostError).reason).toBe('not-in-redis');
    expect(lost.map((e) => e.key)).toEqual(['k']);
    // The old handle's release does not touch the new holder.
    expect(await lock.release()).toBe(false);
    expect((await engine.inspect('k'))?.holders).toHaveLength(1);
    expect(await other.release('k', lock.token)).toBe(false);
    await next.release();
  });

  it('release(key, token) ends every reentrant level at once', async () => {
    const engine = kit.engine();
    const other = kit.peer(engine);
    const inner = deferred<string>();
    const done = engine.withLock('k', (outer) =>
      engine.withLock('k', async () => {
        inner.resolve(outer.token);
        await sleep(100);
      }),
    );
    const token = await inner.promise;
    expect((await engine.inspect('k'))?.holders[0].holdCount).toBe(2);
    expect(await other.release('k', token)).toBe(true);
    expect(await engine.inspect('k')).toBeNull();
    await done;
  });

  it('forceRelease frees the lock whoever holds it; the holder loses it with reason not-in-redis and a lost event', async () => {
    const engine = kit.engine();
    const admin = kit.peer(engine);
    const lost: LockEvents['lost'][] = [];
    engine.on('lost', (e) => lost.push(e));
    const readers = await Promise.all([1, 2].map(() => engine.acquire('k', { mode: 'read', leaseMs: 600 })));
    const waiting = admin.acquire('k', { waitTimeoutMs: 5_000 });

    expect(await admin.forceRelease('k')).toBe(true);
    const writer = await waiting; // woken by the forced release
    const reasons = await Promise.all(readers.map((r) => abortedWithin(r.signal, 600)));
    for (const reason of reasons) {
      expect(reason).toBeInstanceOf(LockLostError);
      expect((reason as LockLostError).reason).toBe('not-in-redis');
      expect((reason as LockLostError).key).toBe('k');
    }
    expect(lost).toHaveLength(2);
    expect(lost.every((e) => e.key === 'k' && e.mode === 'read' && e.error instanceof LockLostError)).toBe(true);
    expect(readers.every((r) => !r.isHeld)).toBe(true);

    // On the holder's own engine the loss is immediate.
    const adminLost: LockEvents['lost'][] = [];
    admin.on('lost', (e) => adminLost.push(e));
    expect(await admin.forceRelease('k')).toBe(true);
    expect(writer.signal.aborted).toBe(true);
    expect((writer.signal.reason as LockLostError).reason).toBe('not-in-redis');
    expect(adminLost).toHaveLength(1);
    expect(await admin.forceRelease('k')).toBe(false);
    expect(await writer.release()).toBe(false);
    for (const r of readers) expect(await r.release()).toBe(false);
  });

  it('a release or re-entry the client re-sends (same seq) is applied once', async () => {
    const engine = kit.engine();
    const redis = kit.redis();
    const store = kit.store(engine);
    const lock = store.lock('k');
    await engine.runInOwnerScope(async () => {
      const outer = await engine.acquire('k');
      const inner = await engine.acquire('k');
      expect(inner.token).toBe(outer.token);
      expect((await engine.inspect('k'))?.holders[0].holdCount).toBe(2);

      // One release, sent twice (a reconnect re-sends what had no reply), carries one seq: higher than any the
      // owner has used so far.
      const seq = 1_000_000;
      expect(await store.release(lock, outer.token, seq)).toBe('level');
      expect(await store.release(lock, outer.token, seq)).toBe('level');
      expect((await engine.inspect('k'))?.holders[0].holdCount).toBe(1);

      // A re-sent re-entry is applied once as well.
      const reenter = () =>
        store.acquire({
          lock,
          mode: 'write',
          token: outer.token,
          leaseMs: 30_000,
          seq: seq + 1,
          undoSeq: seq + 2,
          ownerId: 'owner',
          downgradeToken: '',
          waiterId: '',
          reentry: true,
          fair: false,
        });
      const replies = [await reenter(), await reenter()];
      expect(replies).toEqual([
        { granted: true, fencingToken: outer.fencingToken, reentered: true },
        { granted: true, fencingToken: outer.fencingToken, reentered: true },
      ]);
      expect((await engine.inspect('k'))?.holders[0].holdCount).toBe(2);

      // The next, new release goes through; the last level ends the hold.
      expect(await store.release(lock, outer.token, seq + 2)).toBe('level');
      expect(await store.release(lock, outer.token, seq + 3)).toBe('ended');
      expect(await store.release(lock, outer.token, seq + 3)).toBe('not-held');
      expect(await engine.inspect('k')).toBeNull();
      // The engine's handles now refer to a hold Redis no longer has.
      expect(await inner.release()).toBe(false);
      expect(await outer.release()).toBe(false);
    });
    expect(await keysUnder(redis, engine.settings.keyPrefix)).toEqual([]);
  });

  it('a script Redis forgot is loaded with SCRIPT LOAD and run by SHA, never sent with EVAL (Redis 8 evicts those)', async () => {
    const server = await kit.server();
    const engine = kit.engine({ redis: server.url });
    const redis = kit.redis(server.url);
    await (await engine.acquire('k')).release();
    await redis.script('FLUSH');
    await redis.config('RESETSTAT');
    await Promise.all(['k', 'l', 'm'].map(async (key) => (await engine.acquire(key)).release()));
    const stats = await commandStats(redis);
    expect(stats.eval ?? 0).toBe(0);
    // One load per script, shared by the callers that met NOSCRIPT together (ACQUIRE's batch, RELEASE's batch).
    expect(stats['script|load']).toBeGreaterThanOrEqual(1);
    expect(stats['script|load']).toBeLessThanOrEqual(4);
    expect(await keysUnder(redis, engine.settings.keyPrefix)).toEqual([]);
  });

  it('a release whose script had to be reloaded still lands before the next command of the same owner', async () => {
    const engine = kit.engine();
    const redis = kit.redis();
    await engine.runInOwnerScope(async () => {
      const first = await engine.acquire('k');
      // RELEASE is unknown to Redis (NOSCRIPT, then re-sent as EVAL) while ACQUIRE is loaded and would overtake it.
      await redis.script('FLUSH');
      await redis.script('LOAD', ACQUIRE.source);
      const releasing = first.release();
      const second = await engine.acquire('k');
      expect(await releasing).toBe(true);
      expect(second.reentrant).toBe(false);
      expect((await engine.inspect('k'))?.holders.map((h) => h.holdCount)).toEqual([1]);
      expect(await second.release()).toBe(true);
    });
    expect(await engine.inspect('k')).toBeNull();
    expect(await keysUnder(redis, engine.settings.keyPrefix)).toEqual([]);
  });
});
