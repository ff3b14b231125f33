import { afterEach, describe, expect, it } from '@jest/globals';
import { GlideClient, Logger } from '@valkey/valkey-glide';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createClient as createClient6 } from 'redis6';
import { LockConfigError } from '../../lib/errors/lock-config.error.js';
import { LockService, RedisLockModule } from '../../lib/index.js';
import { ACQUIRE } from '../../lib/redis/scripts/lock-scripts.js';
import { freePort } from '../../tools/redis-server.mjs';
import { LockTestKit, MemoryLogger, sleep, uniquePrefix } from '../support/lock-test-kit.js';
import { redisUrl } from '../support/redis.js';

/** What Lua source looks like in a message (a script the server was sent, quoted back). */
const LUA = /redis\.call|KEYS\[|ARGV\[|\blocal\b|\breturn\b/;

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

  it('a server that runs no script at all (SCRIPT, EVALSHA and EVAL renamed away) fails the start-up, naming redis', async () => {
    const gone = ['SCRIPT', 'EVALSHA', 'EVAL'].flatMap((c) => ['--rename-command', c, '']);
    const server = await kit.server(gone);
    const err = await startFailure(kit.app({}, { redis: server.url }));
    expect(err).toBeInstanceOf(LockConfigError);
    expect(err).toMatchObject({ option: 'redis' });
    expect((err as Error).message).toMatch(/cannot run Lua scripts .*every lock operation is one script/);
    expect((err as Error).message).not.toMatch(LUA);
  });

  it('a server whose SCRIPT command is renamed away (config file) starts on the EVAL fallback, and says so once', async () => {
    const logger = new MemoryLogger();
    const dir = mkdtempSync(join(tmpdir(), 'nest-redis-locks-conf-'));
    writeFileSync(join(dir, 'no-script.conf'), 'rename-command SCRIPT ""\n');
    const server = await kit.server(['--include', join(dir, 'no-script.conf')]);
    const { locks } = await kit.app({}, { redis: server.url, logger: logger });
    expect(logger.lines.filter((l) => /EVAL fallback/.test(l))).toEqual([
      expect.stringMatching(/^warn: .*has no SCRIPT LOAD .*EVAL fallback/),
    ]);
    expect(logger.lines.join('\n')).not.toMatch(LUA);
    const admin = kit.redis(server.url);
    await admin.config('RESETSTAT');
    const held = await locks.acquire('k');
    expect(await locks.tryAcquire('k')).toBeNull();
    await held.release();
    // Straight to EVAL: no EVALSHA sent first only to be told NOSCRIPT.
    const stats = await admin.info('commandstats');
    expect(stats).toMatch(/^cmdstat_eval:calls=[1-9]/m);
    expect(stats).not.toMatch(/^cmdstat_evalsha:/m);
  });

  it('an ACL user without EVALSHA and EVAL fails the start-up, naming the rights and the ACL rule that grants them', async () => {
    const user = uniquePrefix('nolua').replace(/\W/g, '');
    const admin = kit.redis();
    await admin.call('ACL', 'SETUSER', user, 'on', '>pw', '~*', '&*', '+@all', '-evalsha', '-eval');
    kit.add(() => admin.call('ACL', 'DELUSER', user));
    const url = new URL(redisUrl());
    url.username = user;
    url.password = 'pw';
    // Not `kit.app`: its leftover check at the end would log in as the user, removed by then.
    const err = await startFailure(kit.startApp({ imports: [RedisLockModule.forRoot({ redis: url.toString() })] }));
    expect(err).toBeInstanceOf(LockConfigError);
    expect(err).toMatchObject({ option: 'redis' });
    const message = (err as Error).message;
    expect(message).toMatch(new RegExp(`the Redis user "${user}" .*may not run EVALSHA, EVAL \\(NOPERM`));
    expect(message).toMatch(new RegExp(`ACL SETUSER ${user} \\+evalsha \\+eval`));
    expect(message).not.toMatch(LUA);
  });

  it('an ACL user whose key pattern leaves out the lock keys fails the start-up, naming the pattern to grant', async () => {
    const user = uniquePrefix('nokeys').replace(/\W/g, '');
    const admin = kit.redis();
    await admin.call('ACL', 'SETUSER', user, 'on', '>pw', '~other:*', '&*', '+@all');
    kit.add(() => admin.call('ACL', 'DELUSER', user));
    const url = new URL(redisUrl());
    url.username = user;
    url.password = 'pw';
    const module = RedisLockModule.forRoot({ redis: url.toString(), keyPrefix: 'orders:' });
    const err = await startFailure(kit.startApp({ imports: [module] }));
    expect(err).toBeInstanceOf(LockConfigError);
    expect((err as Error).message).toMatch(
      new RegExp(`the Redis user "${user}" .*may not access the lock keys \\(NOPERM.*ACL SETUSER ${user} ~orders:\\*`),
    );
  });

  it.each(['allkeys-lru', 'volatile-ttl'])(
    'maxmemory-policy %s (it can evict lock keys) is one warning at start-up, naming the policy and the risk',
    async (policy) => {
      const logger = new MemoryLogger();
      const server = await kit.server(['--maxmemory', '100mb', '--maxmemory-policy', policy]);
      await kit.app({}, { redis: server.url, logger: logger });
      const warnings = logger.lines.filter((l) => /maxmemory-policy/.test(l));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(new RegExp(`^warn: .*maxmemory-policy ${policy}.*lock .*evicted.*noeviction`));
    },
  );

  it('maxmemory-policy noeviction starts without a warning', async () => {
    const logger = new MemoryLogger();
    const server = await kit.server(['--maxmemory', '100mb', '--maxmemory-policy', 'noeviction']);
    await kit.app({}, { redis: server.url, logger: logger });
    expect(logger.lines).toEqual([]);
  });

  it('WAIT refused with waitForReplicas on fails the start-up, naming waitForReplicas, said once (no warning too)', async () => {
    const logger = new MemoryLogger();
    const server = await kit.server(['--rename-command', 'WAIT', '']);
    const options = { redis: server.url, waitForReplicas: { replicas: 1 }, logger: logger, commandTimeoutMs: 300 };
    const err = await startFailure(kit.app({}, options));
    expect(err).toBeInstanceOf(LockConfigError);
    expect(err).toMatchObject({ option: 'waitForReplicas' });
    expect((err as Error).message).toMatch(/refused WAIT .*turn waitForReplicas off/);
    // The probe a plain engine reports the refusal with is left to the start-up check (it would say it after 300 ms).
    await sleep(700);
    expect(logger.lines.filter((l) => /WAIT/.test(l))).toEqual([]);
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

  it('a GLIDE client whose requestTimeout (250 ms by default) is shorter than commandTimeoutMs is one warning', async () => {
    const logger = new MemoryLogger();
    Logger.init('off');
    const at = new URL(redisUrl());
    const addresses = [{ host: at.hostname, port: Number(at.port) }];
    const short = await GlideClient.createClient({ addresses });
    kit.add(async () => short.close());
    await kit.app({}, { redis: short, logger: logger });
    expect(logger.lines).toEqual([
      expect.stringMatching(
        /^warn: .*GLIDE client's requestTimeout \(250 ms\) is shorter than commandTimeoutMs \(2000 ms\).*requestTimeout in the GLIDE client configuration.*or commandTimeoutMs/,
      ),
    ]);
    const long = await GlideClient.createClient({ addresses, requestTimeout: 2_000 });
    kit.add(async () => long.close());
    const quiet = new MemoryLogger();
    await kit.app({}, { redis: long, logger: quiet });
    expect(quiet.lines).toEqual([]);
  });

  it('a node-redis 6 client whose command timeout is shorter than commandTimeoutMs is one warning', async () => {
    const logger = new MemoryLogger();
    const client = createClient6({ url: redisUrl(), commandOptions: { timeout: 1_000 } });
    client.on('error', () => undefined);
    await client.connect();
    kit.add(() => client.close());
    await kit.app({}, { redis: client, logger: logger });
    expect(logger.lines).toEqual([
      expect.stringMatching(
        /^warn: .*node-redis client's command timeout \(1000 ms\) is shorter than commandTimeoutMs \(2000 ms\).*commandOptions\.timeout/,
      ),
    ]);
  });
});
