import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { it } from 'node:test';
import { LockEngine } from 'nest-redis-locks';
import { createClient } from 'redis';
import { REDIS_URL } from '../src/redis.provider.js';

// The package installed beside node-redis 6 (its optional peer range takes ^6): the app's own client, connected by the
// app, drives the locks; `await using` releases at the end of the block (the handle's Symbol.asyncDispose, compiled
// with this app's lib ES2023 and @types/node, skipLibCheck off).
it('locks through a node-redis 6 client, and `await using` releases at the end of the block', async () => {
  const client = createClient({ url: REDIS_URL });
  client.on('error', () => undefined);
  await client.connect();
  const engine = new LockEngine({ redis: client, keyPrefix: 'consumer-nest12-node-redis6:' });
  const key = `job:${randomUUID()}`;
  try {
    {
      await using lock = await engine.acquire(key);
      assert.equal(lock.isHeld, true);
      assert.equal(await engine.tryAcquire(key), null);
    }
    const again = await engine.tryAcquire(key);
    assert.notEqual(again, null, 'released when the block ended');
    await again?.release();
  } finally {
    await engine.close();
    await client.close();
  }
});
