import { performance } from 'node:perf_hooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { LockError } from '../../lib/errors/lock.error.js';
import { LockUnavailableError } from '../../lib/errors/lock-unavailable.error.js';
import type { LockEngine } from '../../lib/locking/engine/lock-engine.js';
import type { LockEngineOptions } from '../../lib/locking/engine/engine-options.js';
import type { PermitHandle } from '../../lib/types/permit.types.js';
import { RedisProcess } from '../support/faults.js';
import { keysUnder, LockTestKit, sleep, track, until } from '../support/lock-test-kit.js';

/*
 * Semaphores when Redis fails (the locks' version: redis-failures.spec.ts): a real redis-server paused (SIGSTOP) or
 * killed (connections refused) and restarted. Every permit call settles within its bound with a LockUnavailableError,
 * and a grant that reaches Redis after its caller gave up is undone once Redis answers again: no orphaned permit.
 */

const COMMAND_MS = 400;
const WAIT_MS = 800;
/** Slack on every bound: scheduling on a busy 2-core machine. */
const SLACK_MS = 600;

async function timed(promise: Promise<unknown>): Promise<{ ms: number; error: unknown }> {
  const start = performance.now();
  const error = await promise.then(
    () => undefined,
    (err: unknown) => err,
  );
  return { ms: performance.now() - start, error };
}

function expectUnavailable(error: unknown, operation: string, reasons: readonly string[]): void {
  expect(error).toBeInstanceOf(LockUnavailableError);
  expect(error).toBeInstanceOf(LockError);
  const e = error as LockUnavailableError;
  expect(e.operation).toBe(operation);
  expect(reasons).toContain(e.reason);
}

describe('semaphores when Redis fails', () => {
  const kit = new LockTestKit();
  let server: RedisProcess;
  let admin: Redis;

  beforeAll(async () => {
    server = await RedisProcess.start();
    admin = new Redis(server.url, { maxRetriesPerRequest: 1 });
  });
  afterEach(async () => {
    if (server.paused) server.resume();
    await kit.closeAll();
    kit.logger.lines.length = 0;
  });
  afterAll(async () => {
    admin.disconnect();
    await server.dispose();
  });

  const engine = (options: Partial<LockEngineOptions> = {}): LockEngine =>
    kit.engine({ redis: server.url, commandTimeoutMs: COMMAND_MS, waitTimeoutMs: WAIT_MS, ...options });
  const keysLeft = (engine: LockEngine) => keysUnder(admin, engine.settings.keyPrefix);

  describe('paused (SIGSTOP)', () => {
    it('every permit call settles within its bound with a LockUnavailableError, and no permit is left after the resume', async () => {
      const a = engine();
      const held = await a.acquirePermit('held', { limit: 2 });
      // A waiter already waiting when Redis stops answering: its bound runs from its own call.
      const full = [await a.acquirePermit('full', { limit: 1 })];
      const waiter = track(a.acquirePermit('full', { limit: 1 }));
      await sleep(100);
      server.pause();
      const calls = {
        acquirePermit: timed(a.acquirePermit('k', { limit: 2 })),
        withPermit: timed(a.withPermit('w', () => 'ran', { limit: 2 })),
        waiter: timed(waiter.promise),
        tryAcquirePermit: timed(a.tryAcquirePermit('k', { limit: 2 })),
        inspectPermits: timed(a.inspectPermits('k')),
        forceReleasePermits: timed(a.forceReleasePermits('k')),
        setPermitLimit: timed(a.setPermitLimit('k', 3)),
        handleRelease: timed(held.release()),
      };
      const results = Object.fromEntries(
        await Promise.all(Object.entries(calls).map(async ([name, p]) => [name, await p])),
      );
      server.resume();

      for (const name of ['acquirePermit', 'withPermit']) {
        expect(results[name].ms).toBeLessThan(WAIT_MS + COMMAND_MS + SLACK_MS);
        expectUnavailable(results[name].error, 'acquire', ['timeout']);
      }
      expect(results.waiter.ms).toBeLessThan(WAIT_MS + COMMAND_MS + SLACK_MS);
      expectUnavailable(results.waiter.error, 'acquire', ['timeout']);
      for (const [name, operation] of [
        ['tryAcquirePermit', 'acquire'],
        ['inspectPermits', 'inspect'],
        ['forceReleasePermits', 'forceRelease'],
        ['setPermitLimit', 'acquire'],
        ['handleRelease', 'release'],
      ] as const) {
        expect(results[name].ms).toBeLessThan(COMMAND_MS + SLACK_MS);
        expectUnavailable(results[name].error, operation, ['timeout']);
      }
      await full[0].release();
      // setPermitLimit was applied after the resume (it keeps the limit for a day): dropped before the check.
      // setPermitLimit reached Redis after the resume too (nothing undoes an administrative call): the limit it keeps
      // for a day is dropped once the late grants on the same semaphore are seen undone.
      await until(
        async () => (await a.inspectPermits('k'))?.limit === 3 && (await a.inspectPermits('k'))?.used === 0,
        5_000,
        'the late grants of "k" undone',
      );
      await admin.del(...(await keysLeft(a)).filter((name) => name.includes('{k}')));
      // The acquisitions queued while Redis was paused ran after the resume; their grants were undone, and the
      // release that got no answer was sent again: no permit is left.
      await until(async () => (await keysLeft(a)).length === 0, 5_000, 'every permit undone');
      const b = kit.peer(a, { redis: server.url });
      const again = await Promise.all([
        b.tryAcquirePermit('held', { limit: 1 }),
        b.tryAcquirePermit('w', { limit: 1 }),
        b.tryAcquirePermit('full', { limit: 1 }),
      ]);
      expect(again.map((p) => p?.isHeld)).toEqual([true, true, true]);
      for (const permit of again) await permit?.release();
    });

    it('a permit granted after its caller gave up is undone: 20 acquisitions of one batch and 3 of one semaphore, each failed in time', async () => {
      const a = engine();
      await a.ping();
      server.pause();
      // The first goes out alone; those asked in the same tick go out as batches behind it.
      const calls = [
        a.tryAcquirePermit('first', { limit: 1 }),
        ...Array.from({ length: 20 }, (_, i) => a.tryAcquirePermit(`p${i}`, { limit: 1 })),
        ...Array.from({ length: 3 }, () => a.tryAcquirePermit('three', { limit: 3 })),
      ].map((p) => timed(p));
      const results = await Promise.all(calls);
      server.resume();
      for (const r of results) {
        expect(r.ms).toBeLessThan(COMMAND_MS + SLACK_MS);
        expectUnavailable(r.error, 'acquire', ['timeout']);
      }
      // After the resume Redis ran them all and granted every permit; each grant is undone (not left to its lease).
      await until(async () => (await keysLeft(a)).length === 0, 5_000, 'every late grant undone');
      const b = kit.peer(a, { redis: server.url });
      const again: (PermitHandle | null)[] = await Promise.all([
        ...Array.from({ length: 20 }, (_, i) => b.tryAcquirePermit(`p${i}`, { limit: 1 })),
        ...Array.from({ length: 3 }, () => b.tryAcquirePermit('three', { limit: 3 })),
      ]);
      expect(again.every((p) => p !== null)).toBe(true);
      await Promise.all(again.map((p) => p?.release() ?? Promise.resolve(false)));
    });
  });

  describe('refusing connections (killed), then restarted on the same port', () => {
    it('permit calls fail fast as unreachable, and permits work again after the restart', async () => {
      const a = engine();
      const warmed = await a.acquirePermit('warm', { limit: 2 });
      await warmed.release();
      await server.kill();
      const down = await Promise.all([
        timed(a.acquirePermit('k', { limit: 2 })),
        timed(a.tryAcquirePermit('k', { limit: 2 })),
        timed(a.withPermit('k', () => 'ran', { limit: 2 })),
        timed(a.inspectPermits('k')),
        timed(a.forceReleasePermits('k')),
      ]);
      for (const [i, op] of (['acquire', 'acquire', 'acquire', 'inspect', 'forceRelease'] as const).entries()) {
        expect(down[i].ms).toBeLessThan((i === 0 || i === 2 ? WAIT_MS : 0) + COMMAND_MS + SLACK_MS);
        expectUnavailable(down[i].error, op, ['unreachable', 'timeout']);
      }
      await server.restart();
      await until(
        async () =>
          (await a.tryAcquirePermit('k', { limit: 2 }).then(
            (p) => p?.release(),
            () => false,
          )) === true,
        5_000,
        'permits again',
      );
      // The waiting acquisition sent while Redis was down may reach the restarted server late (its registration and
      // the stored limit): it is withdrawn in the background, not before the next call (a full suite's load showed it).
      await until(async () => (await keysLeft(a)).length === 0, 3_000, 'a late waiter registration withdrawn');
    });
  });
});
