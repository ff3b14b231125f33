import { expect } from '@jest/globals';
import type { INestApplication, ModuleMetadata } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { LockEngine } from '../../lib/locking/engine/lock-engine.js';
import type { LockEngineOptions } from '../../lib/locking/engine/engine-options.js';
import type { LockLogger } from '../../lib/locking/events/lock-events.js';
import { LockService } from '../../lib/nest/lock.service.js';
import { RedisLockModule } from '../../lib/nest/redis-lock.module.js';
import type { RedisLockModuleOptions } from '../../lib/nest/redis-lock-module-options.interface.js';
import { lockKeys } from '../../lib/redis/key-layout.js';
import type { RedisConnectionInput } from '../../lib/redis/connection.js';
import { RedisLockStore } from '../../lib/redis/redis-lock-store.js';
import { createMemoryLockEngine } from '../../lib/testing/memory-lock-engine.js';
import type { MemoryLockWorld } from '../../lib/testing/memory-lock-world.js';
import { startRedisServer } from '../../tools/redis-server.mjs';
import type { RedisServerProcess } from '../../tools/redis-server.mjs';
import { compileOrCleanUp } from './nest-app.js';
import type { LockTestApp } from './nest-app.js';
import { keysUnder, redisUrl, uniquePrefix } from './redis.js';

/** A logger that keeps what the engine reports instead of printing it (lost locks are expected in these tests). */
export class MemoryLogger implements LockLogger {
  readonly lines: string[] = [];
  warn(message: string): void {
    this.lines.push(`warn: ${message}`);
  }
  error(message: string): void {
    this.lines.push(`error: ${message}`);
  }
}

/**
 * The one resource tracker of the tests: engines, Redis clients, script gateways, private redis-servers and Nest
 * applications a test opens, and engines on the memory store. `closeAll` (in `afterEach`) closes them in reverse
 * order, then fails the test if any lock state is left under a key prefix the test's engines or apps used (in Redis
 * or in a memory world), then stops the private servers.
 */
export class LockTestKit {
  readonly logger = new MemoryLogger();
  private readonly closers: (() => Promise<unknown>)[] = [];
  private readonly prefixes: { readonly url: string; readonly prefix: string }[] = [];
  private readonly listers: { readonly prefix: string; readonly list: (prefix: string) => Promise<string[]> }[] = [];
  private readonly worlds: { readonly world: MemoryLockWorld; readonly prefix: string }[] = [];
  private readonly servers: RedisServerProcess[] = [];
  /** The Redis each engine of the kit talks to, so that a peer talks to the same one. */
  private readonly redisOf = new WeakMap<LockEngine, LockEngineOptions['redis']>();

  /** An engine with a fresh key prefix (or `options.keyPrefix`) and a quiet logger. */
  engine(options: Partial<LockEngineOptions> = {}): LockEngine {
    const engine = new LockEngine({ redis: redisUrl(), keyPrefix: uniquePrefix(), logger: this.logger, ...options });
    this.redisOf.set(engine, options.redis ?? redisUrl());
    this.add(() => engine.close());
    this.watchPrefix(typeof options.redis === 'string' ? options.redis : redisUrl(), engine.settings.keyPrefix);
    return engine;
  }

  /** An engine on the memory store of `world` (the testing module's store), with a fresh key prefix by default. */
  memoryEngine(world: MemoryLockWorld, options: Partial<LockEngineOptions> = {}): LockEngine {
    const { redis: _ignored, ...rest } = options;
    const engine = createMemoryLockEngine({ world, keyPrefix: uniquePrefix(), logger: this.logger, ...rest });
    this.add(() => engine.close());
    if (!this.worlds.some((w) => w.world === world && w.prefix === engine.settings.keyPrefix)) {
      this.worlds.push({ world, prefix: engine.settings.keyPrefix });
    }
    return engine;
  }

  /** A second engine on the same Redis and key prefix as `engine`, like another process of the same app. */
  peer(engine: LockEngine, options: Partial<LockEngineOptions> = {}): LockEngine {
    return this.engine({
      redis: this.redisOf.get(engine) ?? redisUrl(),
      keyPrefix: engine.settings.keyPrefix,
      ...options,
    });
  }

  /** A plain ioredis client, e.g. to look at what the locks left in Redis. */
  redis(url = redisUrl()): Redis {
    const client = new Redis(url);
    this.add(() => client.quit().catch(() => client.disconnect()));
    return client;
  }

  /**
   * The script gateway on `engine`'s key prefix, for tests that send one store command at a time (e.g. a command
   * re-sent after a reconnect). `url` may be a client (e.g. a Cluster client of the test's own).
   */
  store(engine: LockEngine, url: RedisConnectionInput = redisUrl()): RedisLockStore {
    const store = new RedisLockStore(url, {
      keyPrefix: engine.settings.keyPrefix,
      identity: { host: 'test-host', pid: 1, app: 'test' },
      subscriptionLingerMs: 0,
      commandTimeoutMs: engine.settings.commandTimeoutMs,
      onConnectionError: (err) => this.logger.warn(String(err)),
      onConnectionState: (change) => this.logger.warn(`${change.connection} connection ${change.state}`),
    });
    this.add(() => store.close());
    return store;
  }

  /**
   * A private redis-server (so command counts and DBSIZE are not shared with parallel tests), stopped last; `args` are
   * added to its command line, `env` to its environment.
   */
  async server(args: readonly string[] = [], env?: Record<string, string>): Promise<RedisServerProcess> {
    const server = await startRedisServer({ args: [...args], env });
    this.servers.push(server);
    return server;
  }

  /**
   * A Nest application of `metadata` plus `RedisLockModule.forRoot` on the test Redis with a fresh key prefix
   * (override any option with `options`), listening on a free loopback port.
   */
  async app(metadata: ModuleMetadata, options: Partial<RedisLockModuleOptions> = {}): Promise<LockTestApp> {
    const prefix = options.keyPrefix ?? uniquePrefix('e2e');
    const lockModule = RedisLockModule.forRoot({ redis: redisUrl(), keyPrefix: prefix, ...options });
    this.watchPrefix(typeof options.redis === 'string' ? options.redis : redisUrl(), prefix);
    const app = await this.startApp({ ...metadata, imports: [lockModule, ...(metadata.imports ?? [])] });
    return { app, http: app.getHttpServer(), locks: app.get(LockService), prefix };
  }

  /**
   * `app` on a private redis-server, with an admin client on it: for tests that count the commands the app sent
   * (`scriptCalls(await commandStats(admin))` after `admin.config('RESETSTAT')`).
   */
  async isolatedApp(
    metadata: ModuleMetadata,
    options: Partial<RedisLockModuleOptions> = {},
  ): Promise<LockTestApp & { readonly admin: Redis }> {
    const server = await this.server();
    const t = await this.app(metadata, { ...options, redis: server.url });
    const admin = this.redis(server.url);
    return { ...t, admin };
  }

  /** A Nest application of `metadata` as it is (no lock module added), listening on a free loopback port. */
  async startApp(metadata: ModuleMetadata): Promise<INestApplication> {
    const moduleRef = await compileOrCleanUp(metadata);
    const app = moduleRef.createNestApplication({ logger: false });
    this.add(() => app.close());
    // Listening before the first request lets supertest send concurrent requests to one server.
    await app.listen(0, '127.0.0.1');
    return app;
  }

  /** A compiled testing module of `metadata` (not initialised), closed by `closeAll`. */
  async compile(metadata: ModuleMetadata): Promise<TestingModule> {
    const moduleRef = await compileOrCleanUp(metadata);
    this.add(() => moduleRef.close());
    return moduleRef;
  }

  /** Checks at `closeAll` that nothing is left under `prefix` (for engines or apps made outside the kit). */
  watchPrefix(url: string, prefix: string): void {
    if (!this.prefixes.some((p) => p.url === url && p.prefix === prefix)) this.prefixes.push({ url, prefix });
  }

  /**
   * Checks at `closeAll` that `list(prefix)` finds nothing, for stores one client cannot scan (e.g. a Cluster: see
   * `RedisCluster.keysUnder` in topologies.ts).
   */
  watchKeys(prefix: string, list: (prefix: string) => Promise<string[]>): void {
    if (!this.listers.some((l) => l.prefix === prefix && l.list === list)) this.listers.push({ prefix, list });
  }

  /** Anything else to close (last in, first closed). */
  add(closer: () => Promise<unknown>): void {
    this.closers.push(closer);
  }

  async closeAll(): Promise<void> {
    try {
      for (const close of this.closers.splice(0).reverse()) await close();
      const leftovers: string[] = [];
      for (const { world, prefix } of this.worlds.splice(0))
        leftovers.push(...world.keys(prefix).map((k) => `memory:${k}`));
      for (const { url, prefix } of this.prefixes.splice(0)) {
        const client = new Redis(url, { maxRetriesPerRequest: 2 });
        try {
          leftovers.push(...(await keysUnder(client, prefix)));
        } finally {
          client.disconnect();
        }
      }
      for (const { prefix, list } of this.listers.splice(0)) leftovers.push(...(await list(prefix)));
      expect(leftovers).toEqual([]);
    } finally {
      for (const server of this.servers.splice(0)) await server.stop();
    }
  }
}

/** Lock keys, wait queues and channel of `key` under `prefix`, as Redis names them (see key-layout.ts). */
export function redisNames(prefix: string, key: string) {
  return lockKeys(prefix, key);
}

export { abortedWithin, deferred, rejectionOf, sleep, track, until } from './async.js';
export { commandStats, keysUnder, redisUrl, uniquePrefix, withoutHarness } from './redis.js';

/**
 * The lease expiry Redis keeps for `token` (ms, Redis time): its score in the leases set, or, when the lock is in its
 * single-holder form (no leases set), the state key's own expiry.
 */
export async function leaseExpiry(
  redis: Redis,
  names: { state: string; leases: string },
  token: string,
): Promise<number | null> {
  const [[, score], [, at]] = (await redis.multi().zscore(names.leases, token).pexpiretime(names.state).exec()) as [
    [null, string | null],
    [null, number],
  ];
  if (score !== null) return Number(score);
  return at > 0 ? at : null;
}

/** Lock script calls (EVALSHA and EVAL) in `INFO commandstats` counts: the library's every lock operation is one. */
export function scriptCalls(stats: Record<string, number>): number {
  return (stats.evalsha ?? 0) + (stats.eval ?? 0);
}
