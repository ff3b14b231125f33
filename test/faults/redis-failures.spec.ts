import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { LockError } from '../../lib/errors/lock.error.js';
import { LockClosedError } from '../../lib/errors/lock-closed.error.js';
import { LockLostError } from '../../lib/errors/lock-lost.error.js';
import { LockUnavailableError } from '../../lib/errors/lock-unavailable.error.js';
import type { LockEngine } from '../../lib/locking/engine/lock-engine.js';
import type { LockEngineOptions } from '../../lib/locking/engine/engine-options.js';
import { blockEventLoop, partitionSupport, RedisPartition, RedisProcess } from '../support/faults.js';
import { abortedWithin, keysUnder, LockTestKit, rejectionOf, sleep, until } from '../support/lock-test-kit.js';

/*
 * Real faults against real redis-server processes: paused (SIGSTOP), killed and restarted on the same port, cut
 * off by a black-holed network path, and an event loop blocked past a lease. Bounds are asserted with generous
 * margins (this machine has 2 cores shared with parallel test files); the exact ones are in the README.
 */

const COMMAND_MS = 400;
const WAIT_MS = 800;
/** Slack on every bound: scheduling on a busy 2-core machine. */
const SLACK_MS = 600;

/** How long `promise` took to settle, and its rejection (or `undefined` if it resolved). */
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

describe('when Redis fails', () => {
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

  describe('paused (SIGSTOP)', () => {
    it('every call settles within its bound with a LockUnavailableError, and nothing is left after the resume', async () => {
      const a = engine();
      const held = await a.acquire('held');
      server.pause();
      const calls = {
        acquire: timed(a.acquire('k')),
        tryAcquire: timed(a.tryAcquire('k')),
        inspect: timed(a.inspect('k')),
        forceRelease: timed(a.forceRelease('k')),
        release: timed(a.release('k', 'some-token')),
        handleRelease: timed(held.release()),
        withLock: timed(a.withLock('w', () => 'ran')),
      };
      const results = Object.fromEntries(
        await Promise.all(Object.entries(calls).map(async ([name, p]) => [name, await p])),
      );
      server.resume();

      expect(results.acquire.ms).toBeLessThan(WAIT_MS + COMMAND_MS + SLACK_MS);
      expectUnavailable(results.acquire.error, 'acquire', ['timeout']);
      expect(results.withLock.ms).toBeLessThan(WAIT_MS + COMMAND_MS + SLACK_MS);
      expectUnavailable(results.withLock.error, 'acquire', ['timeout']);
      for (const [name, operation] of [
        ['tryAcquire', 'acquire'],
        ['inspect', 'inspect'],
        ['forceRelease', 'forceRelease'],
        ['release', 'release'],
        ['handleRelease', 'release'],
      ] as const) {
        expect(results[name].ms).toBeLessThan(COMMAND_MS + SLACK_MS);
        expectUnavailable(results[name].error, operation, ['timeout']);
      }
      // The attempts queued while Redis was paused ran after the resume; their grants were undone, and the release
      // that got no answer was sent again: nothing is left.
      await until(async () => (await keysUnder(admin, a.settings.keyPrefix)).length === 0, 5_000, 'every key undone');
      expect(await a.inspect('k')).toBeNull();
      expect(await a.inspect('held')).toBeNull();
      const b = kit.peer(a);
      const again = await b.tryAcquire('k');
      expect(again).not.toBeNull();
      await again?.release();
    });

    it('acquisitions sent together in one batch while Redis is paused each fail in time, and every late grant is undone', async () => {
      const a = engine();
      await a.ping();
      server.pause();
      // The first goes out alone; the 20 asked in the same tick go out as batches behind it.
      const calls = [a.tryAcquire('first'), ...Array.from({ length: 20 }, (_, i) => a.tryAcquire(`b${i}`))].map((p) =>
        timed(p),
      );
      const results = await Promise.all(calls);
      server.resume();
      for (const r of results) {
        expect(r.ms).toBeLessThan(COMMAND_MS + SLACK_MS);
        expectUnavailable(r.error, 'acquire', ['timeout']);
      }
      // After the resume Redis ran the batches and granted every item; each grant is undone, item by item.
      await until(
        async () => (await keysUnder(admin, a.settings.keyPrefix)).length === 0,
        5_000,
        'every late grant undone',
      );
      const b = kit.peer(a);
      const again = await Promise.all(Array.from({ length: 20 }, (_, i) => b.tryAcquire(`b${i}`)));
      expect(again.every((h) => h !== null)).toBe(true);
      await Promise.all(again.map((h) => h?.release() ?? Promise.resolve(false)));
    });

    it('a re-entry granted after its caller gave up is undone: the outer release frees the lock', async () => {
      const a = engine();
      const result = await a.withLock('k', async () => {
        server.pause();
        const nested = await timed(a.withLock('k', () => 'inner'));
        server.resume();
        return nested;
      });
      expect(result.ms).toBeLessThan(WAIT_MS + COMMAND_MS + SLACK_MS);
      expectUnavailable(result.error, 'acquire', ['timeout']);
      // Had the late level stayed in Redis, the outer release would leave the lock held for a whole lease.
      await until(async () => (await keysUnder(admin, a.settings.keyPrefix)).length === 0, 5_000, 'the lock freed');
    });

    it('a holder is told when its lease runs out during the pause, and the lock is free after the resume', async () => {
      const a = engine();
      const b = kit.peer(a);
      const held = await a.acquire('k', { leaseMs: 900 });
      const lost: LockLostError[] = [];
      a.on('lost', (e) => lost.push(e.error));
      server.pause();
      const reason = await abortedWithin(held.signal, 900 + SLACK_MS + 1_000);
      expect(reason).toBeInstanceOf(LockLostError);
      expect((reason as LockLostError).reason).toBe('lease-expired');
      expect(held.isHeld).toBe(false);
      expect(lost).toHaveLength(1);
      server.resume();
      // Freed by token after the resume (the holder was told), not left for the rest of a lease.
      const next = await b.acquire('k', { waitTimeoutMs: 3_000 });
      expect(await held.release()).toBe(false);
      expect(next.isHeld).toBe(true);
      await next.release();
    });
  });

  describe('killed and restarted on the same port', () => {
    it('calls fail fast as unreachable, one warning per connection, and locking works again after the restart', async () => {
      const a = engine();
      const warmed = await a.acquire('warm');
      await warmed.release();
      await server.kill();
      const down = await Promise.all([timed(a.acquire('k')), timed(a.tryAcquire('k')), timed(a.inspect('k'))]);
      for (const [i, op] of (['acquire', 'acquire', 'inspect'] as const).entries()) {
        expect(down[i].ms).toBeLessThan((i === 0 ? WAIT_MS : 0) + COMMAND_MS + SLACK_MS);
        expectUnavailable(down[i].error, op, ['unreachable', 'timeout']);
      }
      await sleep(1_500); // many reconnect attempts
      const lostLines = kit.logger.lines.filter((l) => l.includes('connection lost'));
      expect(lostLines.length).toBeGreaterThanOrEqual(1);
      expect(lostLines.length).toBeLessThanOrEqual(2); // command and subscriber connections, once each
      await server.restart();
      await until(
        async () =>
          (await a.tryAcquire('k').then(
            (h) => h?.release(),
            () => false,
          )) === true,
        5_000,
        'locking again',
      );
      await until(() => kit.logger.lines.some((l) => l.includes('connection restored')), 3_000, 'restored notice');
      expect(kit.logger.lines.filter((l) => l.includes('connection lost'))).toHaveLength(lostLines.length);
    });

    it('a hold Redis lost in the restart is reported lost at the next renewal', async () => {
      const a = engine();
      const held = await a.acquire('k', { leaseMs: 600 });
      await server.kill();
      await server.restart();
      const reason = await abortedWithin(held.signal, 3_000);
      expect(reason).toBeInstanceOf(LockLostError);
      expect(await held.release()).toBe(false);
    });
  });

  describe('the event loop blocked past the lease', () => {
    it('isHeld and signal tell the truth as soon as they are read, before any timer ran', async () => {
      const a = engine();
      const b = kit.peer(a);
      const held = await a.acquire('k', { leaseMs: 300 });
      const other = await a.acquire('other', { leaseMs: 300 });
      const signal = held.signal;
      expect(signal.aborted).toBe(false);
      blockEventLoop(450);
      // isHeld on its own finds the deadline passed too.
      expect(other.isHeld).toBe(false);
      expect(await other.release()).toBe(false);
      // No timer or I/O callback has run since the loop was blocked: the watchdog had no chance.
      // The signal first: read on its own, it must find the deadline passed (not wait for isHeld to notice).
      expect(signal.aborted).toBe(true);
      expect(signal.reason).toBeInstanceOf(LockLostError);
      expect(held.isHeld).toBe(false);
      // The lost hold is freed by token right away.
      const next = await b.acquire('k', { waitTimeoutMs: 2_000 });
      await next.release();
      expect(await held.release()).toBe(false);
    });
  });

  describe('after close', () => {
    it('inspect, release and forceRelease reject with LockClosedError', async () => {
      const a = engine();
      await a.close();
      for (const call of [
        a.inspect('k'),
        a.release('k', 't'),
        a.forceRelease('k'),
        a.acquire('k'),
        a.tryAcquire('k'),
      ]) {
        expect(await rejectionOf(call)).toBeInstanceOf(LockClosedError);
      }
    });
  });

  describe('ACL', () => {
    const prefix = 'acl-test:';
    afterEach(async () => {
      await admin.call('ACL', 'DELUSER', 'nopublish', 'nochannels');
      const left = await keysUnder(admin, prefix);
      if (left.length > 0) await admin.del(...left);
    });

    it("the README's ACL rule gives the library every right it needs", async () => {
      const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
      const rule = readme.split('\n').find((line) => line.startsWith('ACL SETUSER locks '));
      expect(rule).toBeDefined();
      const args = rule!.split(/\s+/).slice(2);
      expect(args[0]).toBe('locks');
      await admin.call('ACL', 'SETUSER', ...args);
      try {
        const asLocks = () =>
          engine({
            redis: { port: server.port, host: '127.0.0.1', username: 'locks', password: 'secret' },
            keyPrefix: 'lock:',
          });
        const a = asLocks();
        const b = asLocks();
        // The start-up check passes under the rule (its scripting probes name a key under the prefix).
        await expect(a.checkServer()).resolves.toBeUndefined();
        // Fast path, contention with a wake-up, renewal, extend, read locks, fair queue, inspect, forceRelease.
        const held = await a.acquire('k', { leaseMs: 300 });
        const waiter = b.acquire('k', { waitTimeoutMs: 3_000, fair: true });
        await until(async () => ((await a.inspect('k'))?.waiting ?? 0) === 1, 2_000, 'a waiter');
        await sleep(400); // past one lease: renewed by the watchdog
        expect(held.isHeld).toBe(true);
        await held.extend(1_000);
        await held.release();
        const next = await waiter;
        await next.release();
        const readers = await Promise.all([a.acquire('r', { mode: 'read' }), b.acquire('r', { mode: 'read' })]);
        expect((await a.inspect('r'))?.holders).toHaveLength(2);
        await Promise.all(readers.map((r) => r.release()));
        await a.acquire('forced');
        expect(await b.forceRelease('forced')).toBe(true);
        // Semaphores: a grant, a waiter woken by a release, renewal, the limit changed, inspect, force release.
        const permits = [await a.acquirePermit('sem', { limit: 1, leaseMs: 300 })];
        const permitWaiter = b.acquirePermit('sem', { limit: 1, waitTimeoutMs: 3_000 });
        await until(async () => (await a.inspectPermits('sem'))?.waiting === 1, 2_000, 'a permit waiter');
        await sleep(400); // past one lease: renewed by the watchdog
        expect(permits[0].isHeld).toBe(true);
        await permits[0].extend(1_000);
        await permits[0].release();
        permits.push(await permitWaiter);
        expect(await a.setPermitLimit('sem', 2)).toBe(1);
        permits.push(await a.acquirePermit('sem', { limit: 2 }));
        expect((await b.inspectPermits('sem'))?.holders).toHaveLength(2);
        expect(await b.forceReleasePermits('sem')).toBe(2);
        expect(await a.ping()).toMatchObject({ command: true, subscriber: true });
        expect(kit.logger.lines.filter((l) => l.includes('permission'))).toEqual([]);
      } finally {
        await kit.closeAll();
        await admin.call('ACL', 'DELUSER', 'locks');
      }
    });

    it('names the command a user may not run (PUBLISH in the release script)', async () => {
      await admin.call('ACL', 'SETUSER', 'nopublish', 'on', '>pw', '~*', '&*', '+@all', '-publish');
      const restricted = engine({
        redis: { port: server.port, host: '127.0.0.1', username: 'nopublish', password: 'pw' },
        keyPrefix: prefix,
      });
      const full = engine({ keyPrefix: prefix });
      const held = await restricted.acquire('k');
      const waiter = full.acquire('k', { waitTimeoutMs: 3_000 });
      await until(async () => ((await full.inspect('k'))?.waiting ?? 0) === 1, 2_000, 'a waiter');
      const error = await rejectionOf(held.release());
      expectUnavailable(error, 'release', ['permission-denied']);
      expect((error as LockUnavailableError).missing).toBe('PUBLISH');
      expect((error as LockUnavailableError).message).toContain('PUBLISH');
      const next = await waiter;
      await next.release();
    });

    it('fails a contended acquisition clearly when the user may not subscribe to the lock channels', async () => {
      await admin.call('ACL', 'SETUSER', 'nochannels', 'on', '>pw', '~*', 'resetchannels', '+@all');
      const restricted = engine({
        redis: { port: server.port, host: '127.0.0.1', username: 'nochannels', password: 'pw' },
        keyPrefix: prefix,
      });
      const full = engine({ keyPrefix: prefix });
      const held = await full.acquire('k');
      const error = await rejectionOf(restricted.acquire('k', { waitTimeoutMs: 2_000 }));
      expectUnavailable(error, 'subscribe', ['permission-denied']);
      expect((error as LockUnavailableError).missing).toBe(`channels &${prefix}*`);
      await held.release();
    });
  });
});

const partitionUnsupported = await partitionSupport();
if (partitionUnsupported) console.warn(`network partition tests skipped: ${partitionUnsupported}`);

describe('cut off by the network (black-holed path, neither end notices)', () => {
  const kit = new LockTestKit();
  let partition: RedisPartition | undefined;

  beforeAll(async () => {
    if (!partitionUnsupported) partition = await RedisPartition.create();
  });
  afterEach(async () => {
    if (partition?.isCut) await partition.heal();
    await kit.closeAll();
  });
  afterAll(async () => {
    await partition?.dispose();
  });

  (partitionUnsupported ? it.skip : it)(
    'calls settle within their bounds; after healing, grants that landed late are undone',
    async () => {
      const p = partition!;
      const a = kit.engine({ redis: p.url, commandTimeoutMs: COMMAND_MS, waitTimeoutMs: WAIT_MS });
      const held = await a.acquire('held');
      await p.cut();
      const results = await Promise.all([
        timed(a.acquire('k')),
        timed(a.tryAcquire('k2')),
        timed(a.inspect('k')),
        timed(held.release()),
      ]);
      const bounds = [WAIT_MS + COMMAND_MS, COMMAND_MS, COMMAND_MS, COMMAND_MS];
      const operations = ['acquire', 'acquire', 'inspect', 'release'];
      results.forEach((r, i) => {
        expect(r.ms).toBeLessThan(bounds[i] + SLACK_MS);
        expectUnavailable(r.error, operations[i], ['timeout']);
      });
      await p.heal();
      const client = new Redis(p.url, { maxRetriesPerRequest: 1 });
      try {
        await until(
          async () => (await keysUnder(client, a.settings.keyPrefix)).length === 0,
          15_000,
          'nothing left after healing',
        );
      } finally {
        client.disconnect();
      }
      const again = await a.acquire('k', { waitTimeoutMs: 5_000 });
      await again.release();
    },
  );
});
