import { describe } from '@jest/globals';
import { Redis } from 'ioredis';
import { keysUnder, redisUrl } from '../support/lock-test-kit.js';
import { kit, liveness } from './dead-waiters.suite.js';

describe('dead and frozen waiters, standalone Redis', () => {
  liveness(
    () => ({
      name: 'standalone',
      engine: (prefix, options) => kit.engine({ keyPrefix: prefix, ...options }),
      workerRedis: redisUrl(),
      keysLeft: async (prefix) => {
        const client = new Redis(redisUrl());
        try {
          return await keysUnder(client, prefix);
        } finally {
          client.disconnect();
        }
      },
    }),
    3,
  );
});
