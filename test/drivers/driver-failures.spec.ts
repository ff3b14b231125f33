import { performance } from 'node:perf_hooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { LockConfigError } from '../../lib/errors/lock-config.error.js';
import { LockError } from '../../lib/errors/lock.error.js';
import { LockUnavailableError } from '../../lib/errors/lock-unavailable.error.js';
import { LockEngine } from '../../lib/locking/engine/lock-engine.js';
import type { LockEngineOptions } from '../../lib/locking/engine/engine-options.js';
import { RedisProcess } from '../support/faults.js';
import { DRIVERS, openDriverClient } from '../support/driver-clients.js';
import type { DriverClient, DriverName } from '../support/driver-clients.js';
import { keysUnder, LockTestKit, sleep, until, uniquePrefix } from '../support/lock-test-kit.js';

/*
 * The failure suite, once per client library an application may hand the library: every call bounded while Redis
 * is paused (SIGSTOP), no raw error of the client reaching a caller, no grant left behind, an ACL denial named,
 * the start-up check asked through the client, and the application's client never closed by the library. A
 * private redis-server per block, so pausing it disturbs no other test.
 */

const COMMAND_MS = 400;
const WAIT_MS = 800;
/** Slack on every bound: scheduling on a busy 2-core machine. */
const SLACK_MS = 700;

async function timed(promise: Promise<unknown>): Promise<{ ms: number; error: unknown }> {
  const start = performance.now();
  const error = await promise.then(
    () => undefined,
    (err: unknown) => err,
  );
  return { ms: performance.now() - start, error };
}

describe.each(DRIVERS)('the %s driver when Redis fails', (name: DriverName) => {
  const kit = new LockTestKit();
  let server: RedisProcess;
  let admin: Redis;
  let app: DriverClient;

  beforeAll(async () => {
    server = await RedisProcess.start();
    admin = new Redis(server.url, { maxRetriesPerRequest: 1 });
    app = await openDriverClient(name, { url: server.url });
  }, 30_000);
  afterEach(async () => {
    if (server.paused) server.resume();
    await kit.closeAll();
  });
  afterAll(async () => {
    await app.close();
    admin.disconnect();
    await server.dispose();
  });

  const engine = (options: Partial<LockEngineOptions> = {}): LockEngine => {
    const e = kit.engine({
      redis: app.client as never,
      commandTimeoutMs: COMMAND_MS,
      waitTimeoutMs: WAIT_MS,
      ...options,
    });
    kit.watchPrefix(server.url, e.settings.keyPrefix);
    return e;
  };

  it('locks through the application client, and leaves it open when the engine closes', async () => {
    const e = engine();
    const held = await e.acquire('order:1');
    expect(await e.tryAcquire('order:1')).toBeNull();
    await held.release();
    await e.close();
    // The application's client still answers after the engine is gone.
    const again = engine();
    await (await again.acquire('order:1')).release();
    expect(await keysUnder(admin, again.settings.keyPrefix)).toEqual([]);
  });

  it('bounds every call while Redis is paused, with a LockUnavailableError, and leaves no grant behind', async () => {
    const e = engine();
    await (await e.acquire('warm')).release(); // scripts loaded, subscriber connected
    server.pause();
    const attempt = await timed(e.acquire('paused:1'));
    expect(attempt.error).toBeInstanceOf(LockUnavailableError);
    expect(attempt.ms).toBeLessThan(WAIT_MS + COMMAND_MS + SLACK_MS);
    const once = await timed(e.tryAcquire('paused:2'));
    expect(once.error).toBeInstanceOf(LockError);
    expect(once.ms).toBeLessThan(COMMAND_MS + SLACK_MS);
    server.resume();
    // Whatever reached Redis after the callers gave up is undone: no key left once the engine is closed.
    await until(
      async () => (await keysUnder(admin, e.settings.keyPrefix)).filter((k) => !k.endsWith(':fence')).length === 0,
      5_000,
    );
    const after = await e.acquire('paused:1');
    await after.release();
  }, 20_000);

  it('puts a hold in doubt while Redis is paused, and back to held when it answers again before the lease ends', async () => {
    const e = engine({ leaseMs: 3_000 });
    const held = await e.acquire('doubt:1');
    const seen: string[] = [];
    held.onStateChange((state) => seen.push(state));
    const pausedAt = performance.now();
    server.pause();
    await until(() => held.state === 'in-doubt', 1_000 + SLACK_MS, 'in doubt');
    expect(performance.now() - pausedAt).toBeLessThan(1_000 + SLACK_MS);
    await sleep(500);
    server.resume();
    await until(() => held.state === 'held', 2_500, 'held again');
    expect(seen).toEqual(['in-doubt', 'held']);
    expect(held.signal.aborted).toBe(false);
    await held.release();
  }, 15_000);

  it('names an ACL denial (NOPERM read by its code, whatever the client did to the message)', async () => {
    const prefix = uniquePrefix('acl');
    await admin.call('ACL', 'SETUSER', `nolua-${name}`, 'on', '>pw', '~*', '&*', '+@all', '-evalsha', '-eval');
    const url = new URL(server.url);
    url.username = `nolua-${name}`;
    url.password = 'pw';
    const limited = await openDriverClient(name, { url: url.toString() });
    kit.add(() => limited.close());
    const e = kit.engine({ redis: limited.client as never, keyPrefix: prefix, commandTimeoutMs: COMMAND_MS });
    const err = await e.tryAcquire('acl:1').then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(err).toBeInstanceOf(LockUnavailableError);
    expect(err).toMatchObject({ reason: 'permission-denied' });
    expect((err as Error).message).toMatch(/EVALSHA/);
  });

  it('asks the server at start-up through the client: WAITAOF where the server lacks it is a LockConfigError', async () => {
    const version = String(await admin.info('server'));
    const major = Number(/^redis_version:(\d+)\.(\d+)/m.exec(version)?.[1]);
    const minor = Number(/^redis_version:(\d+)\.(\d+)/m.exec(version)?.[2]);
    const e = engine({ waitForReplicas: { replicas: 'connected', aof: true } });
    const missing = await e.checkServer().then(
      () => undefined,
      (err: unknown) => err,
    );
    if (major > 7 || (major === 7 && minor >= 2)) {
      expect(missing).toBeUndefined();
    } else {
      expect(missing).toBeInstanceOf(LockConfigError);
      expect(missing).toMatchObject({ option: 'waitForReplicas.aof' });
    }
  });

  it('with waitForReplicas, runs a script the server forgot (SCRIPT FLUSH): the pipeline keeps the other replies', async () => {
    const e = engine({ waitForReplicas: { replicas: 'connected' } });
    await (await e.acquire('flush:1')).release();
    await admin.call('SCRIPT', 'FLUSH');
    // The script and its WAIT go out in one pipeline: NOSCRIPT for the one must not lose the reply of the other.
    const held = await e.acquire('flush:1');
    expect(await e.tryAcquire('flush:2')).not.toBeNull();
    expect(await held.release()).toBe(true);
  });

  it('wakes a waiter by pub/sub through its own subscriber, at once on release', async () => {
    const e = engine();
    const other = engine();
    const held = await e.acquire('wake:1');
    const waiting = other.acquire('wake:1', { waitTimeoutMs: 5_000 });
    await sleep(100);
    const released = performance.now();
    await held.release();
    const next = await waiting;
    expect(performance.now() - released).toBeLessThan(250);
    await next.release();
  });
});
