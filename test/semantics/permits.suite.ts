import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from '@jest/globals';
import { LockConfigError } from '../../lib/errors/lock-config.error.js';
import { LockLostError } from '../../lib/errors/lock-lost.error.js';
import { PermitDeadlockError } from '../../lib/errors/permit-deadlock.error.js';
import { LockAcquireTimeoutError } from '../../lib/errors/lock-acquire-timeout.error.js';
import type { LockEngine } from '../../lib/locking/engine/lock-engine.js';
import type { LockInfo } from '../../lib/types/lock.types.js';
import type { PermitHandle, PermitInfo } from '../../lib/types/permit.types.js';
import { abortedWithin, redisNames, rejectionOf, sleep, track, until } from '../support/lock-test-kit.js';
import { LockWorlds } from './lock-worlds.js';
import type { StoreKind } from './lock-worlds.js';

type Tracked<T> = ReturnType<typeof track<T>>;

/** Starts `acquisition` on `engine` and resolves once its first attempt was refused (its waiter is registered). */
async function waiting<T>(engine: LockEngine, acquisition: () => Promise<T>): Promise<Tracked<T>> {
  let contended = false;
  const off = engine.on('contended', () => (contended = true));
  const tracked = track(acquisition());
  await Promise.race([until(() => contended, 10_000, 'the waiter to register'), tracked.promise]);
  off();
  return tracked;
}

/** What inspect reports, without the lease times that run down on their own. */
function still(info: LockInfo | PermitInfo | null) {
  return info && { ...info, holders: info.holders.map(({ remainingLeaseMs: _, ...holder }) => holder) };
}

/**
 * The semaphore semantics, once per kind of `kinds` (quorum mode has no semaphores: permits.spec.ts checks that it
 * refuses them). Split over two spec files, standalone kinds and Cluster kinds, so Jest's workers share the load.
 */
export function permitSemantics(kinds: readonly StoreKind[]): void {
  describe.each(kinds)('semaphores (%s store)', (kind) => {
    const worlds = new LockWorlds(kind);
    afterEach(() => worlds.closeAll());
    /**
     * Tests that need a second process on the same store, defined for the Redis kinds only: a memory world lives in
     * this process, so they do not apply to it (the dead-holder and dead-waiter paths of the memory store are the
     * same scripts, run in-process by the lease and liveness tests above).
     */
    const processIt = (name: string, fn: () => Promise<void>, timeoutMs?: number) => {
      if (kind !== 'memory') it(name, fn, timeoutMs);
    };

    it('at most `limit` hold a permit at once: 12 callers on 3 engines, limit 3; tryAcquirePermit is null when all are taken', async () => {
      const engines = [worlds.engine(), worlds.engine(), worlds.engine()];
      let inside = 0;
      let most = 0;
      let ran = 0;
      const run = async () => {
        most = Math.max(most, ++inside);
        await sleep(40);
        inside--;
        ran++;
      };
      await Promise.all(
        Array.from({ length: 12 }, (_, i) => engines[i % 3].withPermit('k', run, { limit: 3, waitTimeoutMs: 20_000 })),
      );
      expect(ran).toBe(12);
      expect(most).toBeLessThanOrEqual(3);
      expect(most).toBeGreaterThanOrEqual(2);
      const held = await Promise.all(engines.map((e) => e.acquirePermit('k', { limit: 3 })));
      expect(await engines[0].tryAcquirePermit('k', { limit: 3 })).toBeNull();
      const timeout = await rejectionOf(engines[1].acquirePermit('k', { limit: 3, waitTimeoutMs: 50 }));
      expect(timeout).toBeInstanceOf(LockAcquireTimeoutError);
      expect(timeout).toMatchObject({ key: 'k', limit: 3 });
      expect((timeout as Error).message).toMatch(/^could not get a permit of semaphore "k" \(limit 3\) within 50 ms/);
      expect(await held[1].release()).toBe(true);
      const again = (await engines[0].tryAcquirePermit('k', { limit: 3 })) as PermitHandle;
      expect(again.isHeld).toBe(true);
      for (const permit of [held[0], held[2], again]) expect(await permit.release()).toBe(true);
      expect(await engines[0].inspectPermits('k')).toBeNull();
    });

    it('a release wakes as many waiters as it frees, at once (leases of 10 s), and the others keep waiting', async () => {
      const [a, b, c] = [worlds.engine(), worlds.engine(), worlds.engine()];
      const options = { limit: 2, leaseMs: 10_000, waitTimeoutMs: 30_000 };
      const held = [await a.acquirePermit('k', options), await a.acquirePermit('k', options)];
      const waiters: Tracked<PermitHandle>[] = [];
      for (const engine of [b, c, b, c]) waiters.push(await waiting(engine, () => engine.acquirePermit('k', options)));
      const granted = () => waiters.filter((w) => w.settled).length;
      for (const [i, permit] of held.entries()) {
        const releasedAt = performance.now();
        await permit.release();
        await until(() => granted() > i, 5_000, 'a waiter to get the freed permit');
        expect(performance.now() - releasedAt).toBeLessThan(500);
        await sleep(300);
        expect(granted()).toBe(i + 1);
        expect(await a.inspectPermits('k')).toMatchObject({ used: 2, waiting: 3 - i });
      }
      // The rest: each waiter gives its permit back as soon as it has it, and the last two get theirs.
      await Promise.all(waiters.map(async (w) => expect(await (await w.promise).release()).toBe(true)));
      expect(await a.inspectPermits('k')).toBeNull();
    });

    it.each([false, true])(
      'a release wakes exactly as many waiters as permits it freed, never all of them (fair: %s): wake-ups counted on the channel',
      async (fair) => {
        const [a, b, c] = [worlds.engine(), worlds.engine(), worlds.engine()];
        const options = { limit: 3, leaseMs: 10_000, waitTimeoutMs: 30_000, fair };
        const held = [
          await a.acquirePermit('k', options),
          await a.acquirePermit('k', options),
          await a.acquirePermit('k', options),
        ];
        const wakeUps = await worlds.wakeUps('k');
        const waiters: Tracked<PermitHandle>[] = [];
        for (const engine of [b, c, b, c, b])
          waiters.push(await waiting(engine, () => engine.acquirePermit('k', options)));
        const granted = () => waiters.filter((w) => w.settled).length;
        await sleep(300);
        expect(wakeUps).toEqual([]); // registering, and the heartbeats of 5 waiters, wake nobody while every permit is taken
        // One permit freed: one wake-up, one grant.
        await held[0].release();
        await until(() => granted() === 1, 5_000, 'a waiter to get the freed permit');
        await sleep(300);
        expect([wakeUps.length, granted()]).toEqual([1, 1]);
        // Two freed at once (the limit raised from 3 to 5): two wake-ups, two grants, the last two waiters still wait.
        expect(await a.setPermitLimit('k', 5)).toBe(3);
        await until(() => granted() === 3, 5_000, 'two waiters to get the two new permits');
        await sleep(300);
        expect([wakeUps.length, granted()]).toEqual([3, 3]);
        expect(new Set(wakeUps).size).toBe(3); // three different waiters, each woken once
        expect(await a.inspectPermits('k')).toMatchObject({ used: 5, waiting: 2 });
        for (const permit of held.slice(1)) expect(await permit.release()).toBe(true);
        await Promise.all(waiters.map(async (w) => expect(await (await w.promise).release()).toBe(true)));
        expect(await a.inspectPermits('k')).toMatchObject({ used: 0, waiting: 0 });
        await worlds.dropKeys(); // the limit setPermitLimit keeps for a day
      },
    );

    it.each([1, 2])('fair: true serves waiters in arrival order (limit %i)', async (limit) => {
      const engines = [worlds.engine(), worlds.engine()];
      const options = { limit, leaseMs: 10_000, waitTimeoutMs: 30_000, fair: true };
      const inHand = await Promise.all(Array.from({ length: limit }, () => engines[0].acquirePermit('k', options)));
      const waiters: Tracked<PermitHandle>[] = [];
      for (let i = 0; i < 5; i++)
        waiters.push(await waiting(engines[i % 2], () => engines[i % 2].acquirePermit('k', options)));
      const served = () => waiters.flatMap((w, i) => (w.settled ? [i] : []));
      // One permit freed at a time (the oldest first): each time, the next waiter in arrival order gets it.
      for (let n = 1; n <= waiters.length; n++) {
        await inHand.shift()?.release();
        await until(() => served().length >= n, 5_000, `waiter ${n - 1} to be served`);
        expect(served()).toEqual(Array.from({ length: n }, (_, i) => i));
        inHand.push(await waiters[n - 1].promise);
      }
      for (const permit of inHand) await permit.release();
    });

    it('fencing tokens strictly increase per key across grants, overlapping or not; inspectPermits reports the latest', async () => {
      const [a, b] = [worlds.engine(), worlds.engine()];
      const tokens: number[] = [];
      const take = async (engine: LockEngine) => {
        const permit = await engine.acquirePermit('k', { limit: 3 });
        tokens.push(permit.fencingToken);
        expect((await a.inspectPermits('k'))?.fencingToken).toBe(permit.fencingToken);
        return permit;
      };
      for (let i = 0; i < 4; i++) await (await take(i % 2 ? a : b)).release();
      const overlapping = [await take(a), await take(b), await take(a)];
      const holders = (await b.inspectPermits('k'))?.holders.map((h) => h.fencingToken);
      expect(holders?.sort()).toEqual(overlapping.map((p) => p.fencingToken).sort());
      for (const permit of overlapping) await permit.release();
      await (await take(b)).release();
      for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]);
    });

    it('a holder that stops renewing loses its permit at its lease: a waiter gets it, the holder is told', async () => {
      const [a, b] = [worlds.engine(), worlds.engine()];
      const lost: string[] = [];
      a.on('lost', (e) => lost.push(e.key));
      const askedAt = performance.now();
      const dead = await a.acquirePermit('k', { limit: 1, leaseMs: 500, autoExtend: false });
      const waiter = track(b.acquirePermit('k', { limit: 1, waitTimeoutMs: 10_000 }));
      expect(await abortedWithin(dead.signal, 3_000)).toBeInstanceOf(LockLostError);
      expect(dead.isHeld).toBe(false);
      const next = await waiter.promise;
      // The holder counts its lease less the drift allowance (500 × 1 % + 2 = 7 ms), is told first, then frees the
      // permit by token: the waiter gets it no sooner than that.
      expect(waiter.at! - askedAt).toBeGreaterThanOrEqual(500 - 7);
      expect(waiter.at! - askedAt).toBeLessThan(2_500);
      expect(lost).toEqual(['k']);
      expect(await dead.release()).toBe(false);
      expect(await next.release()).toBe(true);
    });

    it('autoExtend keeps a permit through several leases', async () => {
      const [a, b] = [worlds.engine(), worlds.engine()];
      const permit = await a.acquirePermit('k', { limit: 1, leaseMs: 300 });
      await sleep(1_200);
      expect(permit.isHeld).toBe(true);
      expect(permit.signal.aborted).toBe(false);
      expect(await b.tryAcquirePermit('k', { limit: 1 })).toBeNull();
      const [holder] = (await b.inspectPermits('k'))?.holders ?? [];
      expect(holder?.fencingToken).toBe(permit.fencingToken);
      expect(holder?.remainingLeaseMs).toBeGreaterThan(0);
      expect(holder?.remainingLeaseMs).toBeLessThanOrEqual(300);
      expect(await permit.release()).toBe(true);
    });

    it('the first grant stores the limit, which a caller naming another gets; setPermitLimit lowers it (holders keep theirs) and raises it (waiters get in at once)', async () => {
      const [a, b, c] = [worlds.engine(), worlds.engine(), worlds.engine()];
      const two = [await a.acquirePermit('k', { limit: 2 }), await a.acquirePermit('k', { limit: 2 })];
      expect(await b.tryAcquirePermit('k', { limit: 5 })).toBeNull();
      const five = await waiting(b, () => b.acquirePermit('k', { limit: 5, waitTimeoutMs: 10_000 }));
      await two[0].release();
      const third = await five.promise;
      expect(third.limit).toBe(2);
      expect(worlds.logger.lines.filter((line) => line.includes('limit 5 asked, 2 stored'))).toHaveLength(1);

      expect(await c.setPermitLimit('k', 1)).toBe(2);
      expect([two[1].isHeld, third.isHeld]).toEqual([true, true]);
      expect(await c.inspectPermits('k')).toMatchObject({ limit: 1, used: 2 });
      const one = await waiting(c, () => c.acquirePermit('k', { limit: 1, waitTimeoutMs: 10_000 }));
      await two[1].release();
      await sleep(500);
      expect(one.settled).toBe(false); // 1 held, limit 1
      await third.release();
      const last = await one.promise;
      expect(last.limit).toBe(1);

      const more = [await waiting(b, () => b.acquirePermit('k', { limit: 1, waitTimeoutMs: 10_000 }))];
      more.push(await waiting(c, () => c.acquirePermit('k', { limit: 1, waitTimeoutMs: 10_000 })));
      const raisedAt = performance.now();
      expect(await a.setPermitLimit('k', 3)).toBe(1);
      const granted = await Promise.all(more.map((w) => w.promise));
      expect(Math.max(...more.map((w) => w.at!)) - raisedAt).toBeLessThan(500);
      expect(granted.map((p) => p.limit)).toEqual([3, 3]);
      for (const permit of [last, granted[1]]) await permit.release();
      await granted[0].extend(200); // the last permit's lease, cut short: it must not take the stored limit with it
      await granted[0].release();
      await sleep(400);
      // setPermitLimit keeps the limit while the semaphore is idle (for a day): dropped here for the leftover check.
      expect(await a.inspectPermits('k')).toMatchObject({ limit: 3, used: 0, holders: [] });
      await worlds.dropKeys();
    });

    it('a nested acquisition that could never be granted rejects at once with PermitDeadlockError; under the limit it is granted', async () => {
      const a = worlds.engine();
      await a.withPermit(
        'one',
        async () => {
          const startedAt = performance.now();
          const nested = await rejectionOf(a.withPermit('one', () => 'never', { limit: 1, waitTimeoutMs: 10_000 }));
          expect(nested).toBeInstanceOf(PermitDeadlockError);
          expect(nested).toMatchObject({ key: 'one', limit: 1, held: 1 });
          expect(await rejectionOf(a.acquirePermit('one', { limit: 1, waitTimeoutMs: 10_000 }))).toBeInstanceOf(
            PermitDeadlockError,
          );
          expect(performance.now() - startedAt).toBeLessThan(2_000);
        },
        { limit: 1 },
      );
      const innerWasGranted = await a.withPermit(
        'two',
        (outer) =>
          a.withPermit(
            'two',
            async (inner) => {
              expect((await a.inspectPermits('two'))?.used).toBe(2);
              expect(
                await rejectionOf(a.withPermit('two', () => 0, { limit: 2, waitTimeoutMs: 10_000 })),
              ).toBeInstanceOf(PermitDeadlockError);
              return inner.isHeld && outer.isHeld && inner.token !== outer.token;
            },
            { limit: 2 },
          ),
        { limit: 2 },
      );
      expect(innerWasGranted).toBe(true);
      expect(await a.inspectPermits('one')).toBeNull();
      expect(await a.inspectPermits('two')).toBeNull();
    });

    it('a nested acquisition is not refused on a stale limit: raised by another engine meanwhile, the nested call is granted', async () => {
      const [a, b] = [worlds.engine(), worlds.engine()];
      const nested = await a.withPermit(
        'raised',
        async () => {
          expect(await b.setPermitLimit('raised', 2)).toBe(1); // a still remembers the limit 1 of its own grant
          return a.withPermit(
            'raised',
            async (inner) => inner.isHeld && (await a.inspectPermits('raised'))?.used === 2,
            {
              limit: 1,
              waitTimeoutMs: 10_000,
            },
          );
        },
        { limit: 1 },
      );
      expect(nested).toBe(true);
      await worlds.dropKeys();
    });

    it('work running beside a permit (sibling branches, even in one withLock) waits for a permit instead of being refused', async () => {
      const a = worlds.engine();
      const ran = await a.withLock('outer', () =>
        Promise.all(
          [0, 60, 120].map(async (delay) => {
            await sleep(delay);
            return a.withPermit(
              'sib',
              async () => {
                await sleep(250);
                return 'ran';
              },
              { limit: 2, waitTimeoutMs: 10_000 },
            );
          }),
        ),
      );
      expect(ran).toEqual(['ran', 'ran', 'ran']);
    });

    it("forceReleasePermits tells this process's holder at once (signal aborted, isHeld false); one token, or one owner id, frees one permit", async () => {
      const a = worlds.engine();
      const [p1, p2] = [await a.acquirePermit('forced', { limit: 2 }), await a.acquirePermit('forced', { limit: 2 })];
      expect(await a.forceReleasePermits('forced', p1.token)).toBe(1);
      expect(p1.signal.aborted).toBe(true);
      expect(p1.isHeld).toBe(false);
      expect(p2.isHeld).toBe(true);
      expect((await a.inspectPermits('forced'))?.used).toBe(1);
      // By owner id, as inspect shows it (what the board and the CLI know of a holder).
      const p3 = await worlds.engine().acquirePermit('forced', { limit: 2 });
      const owner = (await a.inspectPermits('forced'))!.holders.find((h) => h.fencingToken === p3.fencingToken)!.owner;
      expect(await a.forceReleasePermits('forced', { owner })).toBe(1);
      expect((await a.inspectPermits('forced'))!.holders.map((h) => h.fencingToken)).toEqual([p2.fencingToken]);
      expect(p2.isHeld).toBe(true);
      expect(await a.forceReleasePermits('forced')).toBe(1);
      expect(p2.signal.aborted).toBe(true);
      expect(await a.inspectPermits('forced')).toBeNull();
    });

    it('a lock and a semaphore never share a key: each kind refuses the other with LockConfigError naming the key, changing nothing (forceRelease and inspect on a semaphore point to forceReleasePermits / inspectPermits)', async () => {
      const [a, b] = [worlds.engine(), worlds.engine()];
      const refused = async (attempt: Promise<unknown>, key: string, pointsTo: string[] = []) => {
        const err = await rejectionOf(attempt);
        expect(err).toBeInstanceOf(LockConfigError);
        expect(err).toMatchObject({ key, option: 'key', message: expect.stringContaining(`"${key}"`) });
        for (const call of pointsTo) expect((err as Error).message).toContain(call);
      };
      const lock = await a.acquire('lock', { mode: 'read' });
      const lockBefore = still(await a.inspect('lock'));
      const permit = { limit: 2, waitTimeoutMs: 1_000 };
      let ran = false;
      await refused(b.acquirePermit('lock', permit), 'lock');
      await refused(b.tryAcquirePermit('lock', permit), 'lock');
      await refused(
        b.withPermit('lock', () => (ran = true), permit),
        'lock',
      );
      await refused(b.inspectPermits('lock'), 'lock');
      await refused(b.setPermitLimit('lock', 3), 'lock');
      await refused(b.forceReleasePermits('lock'), 'lock');
      expect(still(await b.inspect('lock'))).toEqual(lockBefore);

      const held = await a.acquirePermit('sem', { limit: 2 });
      const semaphoreBefore = still(await a.inspectPermits('sem'));
      await refused(b.acquire('sem', { waitTimeoutMs: 1_000 }), 'sem');
      await refused(b.tryAcquire('sem', { mode: 'read' }), 'sem');
      await refused(
        b.withLock('sem', () => (ran = true), { waitTimeoutMs: 1_000 }),
        'sem',
      );
      await refused(b.inspect('sem'), 'sem', ['inspectPermits']);
      // The lock's admin release neither frees the permits nor drops the stored limit: it points to the semaphore's own.
      await refused(b.forceRelease('sem'), 'sem', ['forceReleasePermits', 'inspectPermits']);
      await refused(a.forceRelease('sem'), 'sem', ['forceReleasePermits']);
      expect(still(await b.inspectPermits('sem'))).toEqual(semaphoreBefore);
      expect([ran, lock.isHeld, held.isHeld, held.signal.aborted]).toEqual([false, true, true, false]);
      expect(await lock.release()).toBe(true);
      expect(await held.release()).toBe(true);
    });

    it('an invalid limit (0, 1.5, -1, "3", undefined, 100,001) is refused with LockConfigError (option "limit") before anything is written', async () => {
      const a = worlds.engine();
      let ran = false;
      for (const limit of [0, 1.5, -1, '3', undefined, 100_001] as unknown as number[]) {
        const attempts = [
          a.acquirePermit('k', { limit }),
          a.tryAcquirePermit('k', { limit }),
          a.withPermit('k', () => (ran = true), { limit }),
          a.setPermitLimit('k', limit),
        ];
        for (const attempt of attempts) {
          const err = await rejectionOf(attempt);
          expect(err).toBeInstanceOf(LockConfigError);
          expect(err).toMatchObject({ option: 'limit', key: 'k' });
        }
      }
      expect(ran).toBe(false);
      expect(await a.inspectPermits('k')).toBeNull();
      expect(await worlds.keys()).toEqual([]);
    });

    it('a release racing a renewal in flight never reports the permit lost (30 permits, leaseMs 1500, released around renewals)', async () => {
      const [a, b] = [worlds.engine(), worlds.engine()];
      const lost: unknown[] = [];
      for (const engine of [a, b]) engine.on('lost', (e) => lost.push(e));
      const chain = async (engine: LockEngine, key: string) => {
        for (let i = 0; i < 10; i++) {
          const askedAt = performance.now();
          // A lease long enough that a loaded machine's stall cannot let it run out (that would be a true loss).
          const permit = await engine.acquirePermit(key, { limit: 2, leaseMs: 1_500 });
          // The watchdog sends the first renewal leaseMs / 3 after the acquisition was sent: release a few ms either
          // side.
          await sleep(Math.max(0, askedAt + 500 + Math.random() * 8 - 4 - performance.now()));
          expect(await permit.release()).toBe(true);
          expect(permit.signal.aborted).toBe(false);
        }
      };
      await Promise.all([chain(a, 'k'), chain(b, 'k'), chain(a, 'k2')]);
      await sleep(300);
      expect(lost).toEqual([]);
      expect(await a.inspectPermits('k')).toBeNull();
    });

    it('a permit taken away in Redis is reported lost at its next renewal and never comes back', async () => {
      const [a, b] = [worlds.engine(), worlds.engine()];
      const lost: string[] = [];
      a.on('lost', (e) => lost.push(e.key));
      const gone = await a.acquirePermit('k', { limit: 1, leaseMs: 300 });
      const waiter = await waiting(b, () => b.acquirePermit('k', { limit: 1, waitTimeoutMs: 10_000 }));
      expect(await b.forceReleasePermits('k', gone.token)).toBe(1);
      expect(await abortedWithin(gone.signal, 3_000)).toBeInstanceOf(LockLostError);
      const next = await waiter.promise;
      await sleep(500); // renewal ticks the lost permit would have had
      expect((await b.inspectPermits('k'))?.holders.map((h) => h.fencingToken)).toEqual([next.fencingToken]);
      expect([gone.isHeld, await gone.release(), await next.release()]).toEqual([false, false, true]);
      expect(lost).toEqual(['k']);
      if (kind === 'memory') return;

      // Redis drops a lease early (as when its clock jumps ahead) while the semaphore's state lives on (a limit set
      // with setPermitLimit keeps it): the holder's next renewal finds no lease and must not bring the permit back.
      await b.setPermitLimit('r', 1);
      const early = await a.acquirePermit('r', { limit: 1, leaseMs: 300 });
      await worlds.redis().pexpire(redisNames(worlds.keyPrefix, 'r').leases, 1);
      expect(await abortedWithin(early.signal, 3_000)).toBeInstanceOf(LockLostError);
      await sleep(500);
      expect(await b.inspectPermits('r')).toMatchObject({ used: 0, holders: [] });
      const taken = await b.tryAcquirePermit('r', { limit: 1 });
      expect(await taken?.release()).toBe(true);
      expect(lost).toEqual(['k', 'r']);
      await worlds.dropKeys();
    });

    processIt(
      'a holder whose process dies frees its permit at its lease: a waiter gets it within lease + 1 s',
      async () => {
        const a = worlds.engine();
        const leaseMs = 1_000;
        const task = {
          redis: worlds.workerRedis,
          prefix: worlds.keyPrefix,
          key: 'k',
          limit: 1,
          leaseMs,
          fair: false,
          waitTimeoutMs: 10_000,
        };
        const holder = worlds.worker({ kind: 'permit', ...task });
        await holder.next('held', 20_000);
        const waiter = await waiting(a, () => a.acquirePermit('k', { limit: 1, waitTimeoutMs: 20_000 }));
        await sleep(leaseMs * 1.5); // renewed while its process lives
        expect(waiter.settled).toBe(false);
        await holder.kill('SIGKILL');
        const killedAt = performance.now();
        const next = await waiter.promise;
        expect(waiter.at! - killedAt).toBeLessThan(leaseMs + 1_000);
        expect(await next.release()).toBe(true);
      },
    );

    processIt(
      'a holder frozen past its lease (SIGSTOP), its permit untaken meanwhile, learns on thawing that it lost it, and its renewals never grant it again (redis-semaphore 175)',
      async () => {
        const a = worlds.engine();
        const leaseMs = 1_000;
        // A stored limit keeps the semaphore's state (and the frozen holder's record in it) once its lease ran out, as a
        // busy semaphore's state lives on: only the lease says whether the permit is held.
        await a.setPermitLimit('k', 1);
        const holder = worlds.worker({
          kind: 'permit',
          redis: worlds.workerRedis,
          prefix: worlds.keyPrefix,
          key: 'k',
          limit: 1,
          leaseMs,
          fair: false,
          waitTimeoutMs: 10_000,
        });
        const held = await holder.next('held', 20_000);
        await sleep(leaseMs * 1.5); // renewed (autoExtend) while it runs
        expect((await a.inspectPermits('k'))?.holders.map((h) => h.fencingToken)).toEqual([held.fencingToken]);
        process.kill(holder.pid, 'SIGSTOP');
        await sleep(leaseMs * 2.5);
        expect(await a.inspectPermits('k')).toMatchObject({ used: 0, holders: [] }); // ran out; nobody took it
        process.kill(holder.pid, 'SIGCONT');
        const lost = await holder.next('lost', 5_000);
        expect(lost).toMatchObject({ error: 'LockLostError', isHeld: false });
        await sleep(leaseMs); // the renewals the thawed holder's watchdog would send
        expect(await a.inspectPermits('k')).toMatchObject({ limit: 1, used: 0, holders: [] });
        const next = await a.tryAcquirePermit('k', { limit: 1 });
        expect(next?.isHeld).toBe(true);
        expect(next!.fencingToken).toBeGreaterThan(held.fencingToken);
        holder.send({ type: 'release' });
        await holder.next('released', 5_000);
        expect((await a.inspectPermits('k'))?.holders.map((h) => h.fencingToken)).toEqual([next!.fencingToken]);
        expect(await next!.release()).toBe(true);
        await worlds.dropKeys();
      },
      30_000,
    );

    processIt(
      'a waiter named by a wake-up whose process died is passed over: the next live waiter gets the permit within 1.5 s',
      async () => {
        const [a, b] = [worlds.engine(), worlds.engine()];
        for (const fair of [false, true]) {
          const key = `k-${String(fair)}`;
          const held = await a.acquirePermit(key, { limit: 1, leaseMs: 10_000 });
          const task = {
            redis: worlds.workerRedis,
            prefix: worlds.keyPrefix,
            key,
            limit: 1,
            leaseMs: 10_000,
            fair,
            waitTimeoutMs: 30_000,
          };
          const dead = worlds.worker({ kind: 'permit', ...task });
          await dead.next('waiting', 20_000);
          await dead.kill('SIGKILL');
          const live = await waiting(b, () => b.acquirePermit(key, { limit: 1, fair, waitTimeoutMs: 10_000 }));
          const releasedAt = performance.now();
          await held.release();
          const next = await live.promise;
          expect(live.at! - releasedAt).toBeLessThan(1_500);
          expect(await next.release()).toBe(true);
        }
        // The dead waiters' registrations run out by themselves.
        await until(async () => (await worlds.keys()).length === 0, 5_000, 'the dead waiters to be gone');
      },
    );

    processIt(
      'a frozen waiter (SIGSTOP) is passed over within a second; thawed, it finds its turn gone, waits again and gets a permit after',
      async () => {
        const [a, b] = [worlds.engine(), worlds.engine()];
        for (const fair of [true, false]) {
          const key = `k-${String(fair)}`;
          const held = await a.acquirePermit(key, { limit: 1, leaseMs: 10_000 });
          const task = {
            redis: worlds.workerRedis,
            prefix: worlds.keyPrefix,
            key,
            limit: 1,
            leaseMs: 10_000,
            fair,
            waitTimeoutMs: 30_000,
          };
          const frozen = worlds.worker({ kind: 'permit', ...task });
          await frozen.next('waiting', 20_000);
          process.kill(frozen.pid, 'SIGSTOP');
          const live = await waiting(b, () => b.acquirePermit(key, { limit: 1, fair, waitTimeoutMs: 10_000 }));
          const releasedAt = performance.now();
          await held.release();
          const next = await live.promise;
          expect(live.at! - releasedAt).toBeLessThan(1_000);
          // Thawed while the live waiter holds the only permit: it must not get one too.
          process.kill(frozen.pid, 'SIGCONT');
          await sleep(700);
          expect((await a.inspectPermits(key))?.holders.map((h) => [h.pid, h.fencingToken])).toEqual([
            [process.pid, next.fencingToken],
          ]);
          expect(await next.release()).toBe(true);
          const got = await frozen.next('held', 5_000);
          expect(got.fencingToken).toBeGreaterThan(next.fencingToken);
          frozen.send({ type: 'release' });
          await frozen.next('released', 5_000);
          await frozen.exited;
        }
        expect(await worlds.keys()).toEqual([]);
      },
      60_000,
    );

    it('inspectPermits: limit, used, each holder (owner, host, pid, app, lease left), waiting, the last fencing token', async () => {
      const [a, b] = [worlds.engine({ appName: 'permits-a' }), worlds.engine({ appName: 'permits-b' })];
      expect(await a.inspectPermits('k')).toBeNull();
      const owners = new Map<number, string>();
      for (const engine of [a, b]) engine.on('acquired', (e) => owners.set(e.fencingToken, e.owner));
      const options = { limit: 3, leaseMs: 5_000, waitTimeoutMs: 20_000 };
      const held = [
        await a.acquirePermit('k', options),
        await b.acquirePermit('k', options),
        await b.acquirePermit('k', options),
      ];
      const waiters = [
        await waiting(a, () => a.acquirePermit('k', options)),
        await waiting(b, () => b.acquirePermit('k', { ...options, fair: true })),
      ];
      const info = await a.inspectPermits('k');
      expect(info).toMatchObject({ key: 'k', limit: 3, used: 3, waiting: 2, fencingToken: held[2].fencingToken });
      const holders = [...(info?.holders ?? [])].sort((x, y) => x.fencingToken - y.fencingToken);
      expect(holders.map((h) => [h.fencingToken, h.owner, h.app])).toEqual([
        [held[0].fencingToken, owners.get(held[0].fencingToken), 'permits-a'],
        [held[1].fencingToken, owners.get(held[1].fencingToken), 'permits-b'],
        [held[2].fencingToken, owners.get(held[2].fencingToken), 'permits-b'],
      ]);
      for (const holder of holders) {
        expect(holder).toMatchObject({
          mode: 'write',
          host: hostname(),
          pid: process.pid,
          holdCount: 1,
          finished: false,
        });
        expect(holder.remainingLeaseMs).toBeGreaterThan(0);
        expect(holder.remainingLeaseMs).toBeLessThanOrEqual(5_000);
      }
      for (const permit of held) await permit.release();
      for (const w of waiters) await (await w.promise).release();
      expect(await a.inspectPermits('k')).toBeNull();
    });
  });
}
