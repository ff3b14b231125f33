import { afterEach, describe, expect, it } from '@jest/globals';
import { performance } from 'node:perf_hooks';
import { LockConfigError } from '../../lib/errors/lock-config.error.js';
import { LockService, RedisLockModule } from '../../lib/index.js';
import { ACQUIRE } from '../../lib/redis/scripts/lock-scripts.js';
import { freePort } from '../../tools/redis-server.mjs';
import { LockTestKit } from '../support/lock-test-kit.js';

/**
 * The start-up check: an application whose configuration needs what its server lacks does not start, and says what
 * is missing and which option to change, instead of failing call by call. What a managed service or a proxy refuses
 * is played by a real redis-server with the command renamed away (`--rename-command X ""`: it no longer exists).
 */
describe('start-up check of the server', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  const startFailure = (promise: Promise<unknown>) =>
    promise.then(
      () => undefined,
      (err: unknown) => err,
    );

  it('a server without Lua scripting fails the start-up, naming redis', async () => {
    const server = await kit.server(['--rename-command', 'SCRIPT', '', '--rename-command', 'EVALSHA', '']);
    const err = await startFailure(kit.app({}, { redis: server.url }));
    expect(err).toBeInstanceOf(LockConfigError);
    expect(err).toMatchObject({ option: 'redis' });
    expect((err as Error).message).toMatch(/cannot run Lua scripts .*every lock operation is one script/);
  });

  it('WAIT refused with waitForReplicas on fails the start-up, naming waitForReplicas', async () => {
    const server = await kit.server(['--rename-command', 'WAIT', '']);
    const err = await startFailure(kit.app({}, { redis: server.url, waitForReplicas: { replicas: 1 } }));
    expect(err).toBeInstanceOf(LockConfigError);
    expect(err).toMatchObject({ option: 'waitForReplicas' });
    expect((err as Error).message).toMatch(/refused WAIT .*turn waitForReplicas off/);
  });

  it('WAITAOF refused with waitForReplicas.aof fails the start-up, naming waitForReplicas.aof', async () => {
    // Redis 7.0 has no WAITAOF; a newer server gets it renamed away.
    const plain = await kit.server();
    const [info] = (await kit.redis(plain.url).call('COMMAND', 'INFO', 'waitaof')) as unknown[];
    const server = Array.isArray(info) ? await kit.server(['--rename-command', 'WAITAOF', '']) : plain;
    const options = { redis: server.url, waitForReplicas: { replicas: 1, aof: true } };
    const err = await startFailure(kit.app({}, options));
    expect(err).toBeInstanceOf(LockConfigError);
    expect(err).toMatchObject({ option: 'waitForReplicas.aof' });
    expect((err as Error).message).toMatch(/refused WAITAOF .*set waitForReplicas\.aof to false/);
  });

  it('a server with what the configuration needs starts, its scripts already loaded', async () => {
    const server = await kit.server();
    const { locks } = await kit.app({}, { redis: server.url, waitForReplicas: undefined });
    const admin = kit.redis(server.url);
    expect(await admin.call('SCRIPT', 'EXISTS', ACQUIRE.sha)).toEqual([1]);
    const handle = await locks.acquire('k');
    await handle.release();
  });

  it('a server that does not answer at start-up does not hold the application up: one warning, within commandTimeoutMs', async () => {
    const port = await freePort(); // nothing listens there
    const start = performance.now();
    const module = RedisLockModule.forRoot({ redis: `redis://127.0.0.1:${port}`, commandTimeoutMs: 500 });
    const locks = (await kit.startApp({ imports: [module] })).get(LockService);
    expect(performance.now() - start).toBeLessThan(3_000);
    await expect(locks.tryAcquire('k')).rejects.toThrow(/Redis unavailable/);
  });
});
