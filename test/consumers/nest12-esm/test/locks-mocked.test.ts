import 'reflect-metadata';
import { Test } from '@nestjs/testing';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { it } from 'node:test';
import { LockService } from 'nest-redis-locks';
import { CounterService } from '../src/counter.service.js';
import { CounterStore } from '../src/counter.store.js';
import { AppRedis } from '../src/redis.provider.js';

// What many users' unit tests do: replace LockService with a plain object through DI.
it('LockService replaced by a plain object: the service calls withLock with its key', async () => {
  const keys: string[] = [];
  const fakeLocks = {
    withLock: async <T>(key: string, fn: () => Promise<T>): Promise<T> => {
      keys.push(key);
      return fn();
    },
  };
  const moduleRef = await Test.createTestingModule({ providers: [AppRedis, CounterStore, CounterService, LockService] })
    .overrideProvider(LockService)
    .useValue(fakeLocks)
    .compile();
  try {
    const id = randomUUID();
    assert.equal(await moduleRef.get(CounterService).increment(id), 1);
    assert.deepEqual(keys, [`counter-svc:${id}`]);
    assert.equal(await moduleRef.get(CounterStore).read(id), 1);
  } finally {
    await moduleRef.close();
  }
});
