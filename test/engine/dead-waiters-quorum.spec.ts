import { afterAll, beforeAll, describe } from '@jest/globals';
import { Redis } from 'ioredis';
import { RedisProcess, answersPing } from '../support/faults.js';
import { keysUnder } from '../support/lock-test-kit.js';
import { kit, liveness } from './dead-waiters.suite.js';
import type { World } from './dead-waiters.suite.js';

describe('dead and frozen waiters, quorum over 3 masters', () => {
  let masters: RedisProcess[] = [];
  beforeAll(async () => {
    masters = await Promise.all([RedisProcess.start(), RedisProcess.start(), RedisProcess.start()]);
  }, 30_000);
  afterAll(() => Promise.all(masters.map((m) => m.dispose())));

  const world = (): World => ({
    name: 'quorum',
    engine: (prefix, options) => kit.engine({ redis: masters.map((m) => m.url), keyPrefix: prefix, ...options }),
    workerRedis: masters.map((m) => m.url),
    keysLeft: async (prefix) => {
      const found: string[] = [];
      for (const m of masters) {
        if (!(await answersPing('127.0.0.1', m.port))) continue;
        const client = new Redis(m.url);
        try {
          found.push(...(await keysUnder(client, prefix)));
        } finally {
          client.disconnect();
        }
      }
      return found;
    },
  });
  liveness(world, 2);
});
