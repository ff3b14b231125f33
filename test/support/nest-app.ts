import { Test } from '@nestjs/testing';
import type { TestingModule } from '@nestjs/testing';
import type { INestApplication, ModuleMetadata } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { LockRegistry } from '../../lib/nest/lock-registry.js';
import type { LockService } from '../../lib/nest/lock.service.js';
import { until } from './async.js';
import { keysUnder } from './redis.js';

/** A running Nest test application with the lock module, and what the tests need from it. */
export interface LockTestApp {
  readonly app: INestApplication;
  /** `app.getHttpServer()`, for supertest. */
  readonly http: ReturnType<INestApplication['getHttpServer']>;
  readonly locks: LockService;
  /** The `keyPrefix` this app's locks live under (unique per app). */
  readonly prefix: string;
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
export function waitUntilFree(locks: LockService, key: string, withinMs = 500): Promise<void> {
  return until(
    async () => (await locks.inspect(key)) === null,
    withinMs,
    `lock "${key}" to be free after the response`,
  );
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
