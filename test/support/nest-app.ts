import { Test } from '@nestjs/testing';
import type { TestingModule } from '@nestjs/testing';
import type { INestApplication, ModuleMetadata } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { RedisLockModule } from '../../lib/nest/redis-lock.module.js';
import { LockRegistry } from '../../lib/nest/lock-registry.js';
import { LockService } from '../../lib/nest/lock.service.js';
import type { RedisLockModuleOptions } from '../../lib/nest/redis-lock-module-options.interface.js';
import { keysUnder, redisUrl, uniquePrefix } from './redis.js';

/** A running Nest test application with the lock module, and what the tests need from it. */
export interface LockTestApp {
  readonly app: INestApplication;
  /** `app.getHttpServer()`, for supertest. */
  readonly http: ReturnType<INestApplication['getHttpServer']>;
  readonly locks: LockService;
  /** The `keyPrefix` this app's locks live under (unique per app). */
  readonly prefix: string;
}

/** Opens Nest test applications and closes them all in `afterEach`. */
export class TestApps {
  private readonly open: INestApplication[] = [];

  /**
   * Compiles `metadata` plus `RedisLockModule.forRoot` on the test Redis with a fresh key prefix (override any
   * option with `options`), starts it on a free loopback port and returns it.
   */
  async create(metadata: ModuleMetadata, options: Partial<RedisLockModuleOptions> = {}): Promise<LockTestApp> {
    const prefix = options.keyPrefix ?? uniquePrefix('e2e');
    const lockModule = RedisLockModule.forRoot({ redis: redisUrl(), keyPrefix: prefix, ...options });
    const app = await this.start({ ...metadata, imports: [lockModule, ...(metadata.imports ?? [])] });
    return { app, http: app.getHttpServer(), locks: app.get(LockService), prefix };
  }

  /** Compiles `metadata` as it is (no lock module added), starts it on a free loopback port and returns it. */
  async start(metadata: ModuleMetadata): Promise<INestApplication> {
    const moduleRef = await compileOrCleanUp(metadata);
    const app = moduleRef.createNestApplication({ logger: false });
    this.open.push(app);
    // Listening before the first request lets supertest send concurrent requests to one server.
    await app.listen(0, '127.0.0.1');
    return app;
  }

  async closeAll(): Promise<void> {
    for (const app of this.open.splice(0).reverse()) await app.close();
  }
}

/**
 * `Test.createTestingModule(metadata).compile()`. When compiling fails, Nest may already have built a
 * `LockService` (registered, with open Redis connections) that no one will ever shut down: close it here.
 */
export async function compileOrCleanUp(metadata: ModuleMetadata): Promise<TestingModule> {
  const before = LockRegistry.find();
  try {
    return await Test.createTestingModule(metadata).compile();
  } catch (err) {
    for (let leaked = LockRegistry.find(); leaked && leaked !== before; leaked = LockRegistry.find()) {
      LockRegistry.unregister(leaked);
      await leaked.engine.close();
    }
    throw err;
  }
}

/** Waits until `key` is free in Redis (the release after a response is sent may still be in flight). */
export async function waitUntilFree(locks: LockService, key: string, withinMs = 500): Promise<void> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    if ((await locks.inspect(key)) === null) return;
    if (Date.now() > deadline) throw new Error(`lock "${key}" still held ${withinMs} ms after the response`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Every Redis key the app's locks left under its prefix. */
export function lockKeysLeft(redis: Redis, app: LockTestApp): Promise<string[]> {
  return keysUnder(redis, app.prefix);
}

/** Records when each call entered and left a critical section. */
export class Timeline {
  readonly spans: { label: string; enter: number; exit: number }[] = [];

  /** Records a span of `ms` milliseconds labelled `label`. */
  async run(label: string, ms: number): Promise<{ label: string; enter: number; exit: number }> {
    const enter = performance.now();
    await new Promise((r) => setTimeout(r, ms));
    const span = { label, enter, exit: performance.now() };
    this.spans.push(span);
    return span;
  }

  clear(): void {
    this.spans.length = 0;
  }

  /** Whether any two recorded spans overlap in time. */
  overlaps(): boolean {
    const s = [...this.spans].sort((a, b) => a.enter - b.enter);
    let lastExit = Number.NEGATIVE_INFINITY;
    for (const span of s) {
      if (span.enter < lastExit) return true;
      lastExit = Math.max(lastExit, span.exit);
    }
    return false;
  }
}
