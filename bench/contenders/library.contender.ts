import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { INestApplicationContext } from '@nestjs/common';
import { LockEngine, LockService, RedisLockModule } from '../../lib/index.js';
import type { AcquireOptions } from '../../lib/index.js';
import type { Contender, ContenderSpec } from './contender.js';

/** This library's engine used directly: `acquire`, then `handle.release()`. Defaults otherwise. */
export class EngineContender implements Contender {
  readonly engine: LockEngine;

  constructor(
    url: string,
    prefix: string,
    private readonly options: AcquireOptions = {},
  ) {
    this.engine = new LockEngine({ redis: url, keyPrefix: prefix });
  }

  async withLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const handle = await this.engine.acquire(key, this.options);
    try {
      return await fn();
    } finally {
      await handle.release();
    }
  }

  close(): Promise<void> {
    return this.engine.close();
  }
}

/** This library through Nest: `LockService.withLock` from `RedisLockModule.forRoot` in an application context. */
class ServiceContender implements Contender {
  private constructor(
    private readonly app: INestApplicationContext,
    private readonly locks: LockService,
  ) {}

  static async open(url: string, prefix: string): Promise<ServiceContender> {
    const app = await NestFactory.createApplicationContext(RedisLockModule.forRoot({ redis: url, keyPrefix: prefix }), {
      logger: ['error', 'warn'],
    });
    return new ServiceContender(app, app.get(LockService));
  }

  withLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
    return this.locks.withLock(key, fn);
  }

  close(): Promise<void> {
    return this.app.close();
  }
}

export const engineSpec: ContenderSpec = {
  id: 'engine',
  label: 'nest-redis-locks LockEngine',
  kind: 'library',
  settings: 'defaults (lease 30 s, watchdog on, wait 10 s); acquire() + release()',
  create: async (url, prefix) => new EngineContender(url, prefix),
};

export const serviceSpec: ContenderSpec = {
  id: 'service',
  label: 'nest-redis-locks LockService',
  kind: 'library',
  settings: 'RedisLockModule.forRoot defaults, NestFactory.createApplicationContext; withLock()',
  create: (url, prefix) => ServiceContender.open(url, prefix),
};
