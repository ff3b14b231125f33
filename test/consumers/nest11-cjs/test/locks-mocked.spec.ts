import { Test } from '@nestjs/testing';
import { randomUUID } from 'node:crypto';
import { LockService } from 'nest-redis-locks';
import { CounterService } from '../src/counter.service';
import { CounterStore } from '../src/counter.store';
import { AppRedis } from '../src/redis.provider';

// What many users' unit tests do: replace LockService with a plain object. The package must still load
// under ts-jest's CommonJS runtime for this file even to start (it imports LockService for the token).
describe('LockService replaced by a plain object', () => {
  it('the service calls withLock with its key, and the plain object runs the callback', async () => {
    const keys: string[] = [];
    const fakeLocks = {
      withLock: async <T>(key: string, fn: () => Promise<T>): Promise<T> => {
        keys.push(key);
        return fn();
      },
    };
    const moduleRef = await Test.createTestingModule({
      providers: [AppRedis, CounterStore, CounterService, LockService],
    })
      .overrideProvider(LockService)
      .useValue(fakeLocks)
      .compile();
    try {
      const id = randomUUID();
      await expect(moduleRef.get(CounterService).increment(id)).resolves.toBe(1);
      expect(keys).toEqual([`counter-svc:${id}`]);
      expect(await moduleRef.get(CounterStore).read(id)).toBe(1);
    } finally {
      await moduleRef.close();
    }
  });
});
