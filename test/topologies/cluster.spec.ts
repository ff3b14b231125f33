import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { LockAcquireTimeoutError } from '../../lib/errors/lock-acquire-timeout.error.js';
import type { LockEngine } from '../../lib/locking/lock-engine.js';
import { LockTestKit, redisNames, rejectionOf, uniquePrefix } from '../support/lock-test-kit.js';
import { RedisCluster, topologySupport } from '../support/topologies.js';
import type { NodeAddress } from '../support/topologies.js';

const unsupported = await topologySupport();
if (unsupported) console.warn(`Redis Cluster tests skipped: ${unsupported}`);
const maybe = unsupported ? it.skip : it;
const skipped = unsupported ? ` (skipped: ${unsupported})` : '';

describe('on a real 3-master Redis Cluster', () => {
  const kit = new LockTestKit();
  let cluster: RedisCluster | undefined;

  beforeAll(async () => {
    if (!unsupported) cluster = await RedisCluster.start();
  }, 30_000);
  afterEach(() => kit.closeAll());
  afterAll(() => cluster?.dispose());

  /** An engine with an ioredis `Cluster` client of its own, on `prefix`. */
  function engine(c: RedisCluster, prefix: string): LockEngine {
    const client = c.client();
    kit.add(() => c.close(client));
    const e = kit.engine({ redis: client, keyPrefix: prefix });
    kit.watchKeys(prefix, c.keysUnder);
    return e;
  }

  /** One lock key per master: their names (one hash tag each) live on three different nodes. */
  async function keyPerMaster(c: RedisCluster, prefix: string): Promise<{ key: string; master: NodeAddress }[]> {
    const found = new Map<number, { key: string; master: NodeAddress }>();
    for (let i = 0; found.size < 3; i++) {
      if (i > 200) throw new Error('no key per master among 200 candidates');
      const key = `k${i}`;
      const master = await c.masterFor(redisNames(prefix, key).state);
      if (!found.has(master.port)) found.set(master.port, { key, master });
    }
    return [...found.values()];
  }

  /** Whether `master` itself (not the Cluster) holds the state hash of `key`. */
  async function stateOn(master: NodeAddress, prefix: string, key: string): Promise<boolean> {
    const client = new Redis({ host: master.host, port: master.port, maxRetriesPerRequest: 1 });
    try {
      return (await client.exists(redisNames(prefix, key).state)) === 1;
    } finally {
      client.disconnect();
    }
  }

  maybe(`two engines exclude each other on keys of different slots; a lock across slots is all or nothing${skipped}`, async () => {
    const c = cluster!;
    const prefix = uniquePrefix('cluster');
    const a = engine(c, prefix);
    const b = engine(c, prefix);
    const keys = await keyPerMaster(c, prefix);
    expect(new Set(keys.map((k) => k.master.port)).size).toBe(3);

    // Exclusion on each master's key, the state written on the master that serves its slot.
    for (const { key, master } of keys) {
      const held = await a.acquire(key);
      expect(await stateOn(master, prefix, key)).toBe(true);
      expect(await b.tryAcquire(key)).toBeNull();
      expect(await b.tryAcquire(key, { mode: 'read' })).toBeNull();
      const waiting = b.acquire(key, { waitTimeoutMs: 5_000 });
      await held.release();
      const next = await waiting;
      expect(next.fencingToken).toBeGreaterThan(held.fencingToken);
      await next.release();
    }

    // Concurrent read-modify-writes from both engines on all three keys at once.
    const counters = new Map(keys.map(({ key }) => [key, 0]));
    await Promise.all(
      Array.from({ length: 30 }, (_, i) => {
        const { key } = keys[i % 3];
        return (i % 2 ? a : b).withLock(
          key,
          async () => {
            const read = counters.get(key)!;
            await new Promise<void>((r) => setTimeout(r, 1));
            counters.set(key, read + 1);
          },
          { waitTimeoutMs: 10_000 },
        );
      }),
    );
    expect([...counters.values()]).toEqual([10, 10, 10]);

    // All or nothing across the three masters: one key taken blocks the whole set, and nothing else stays taken.
    const [first, second, third] = keys;
    const blocker = await a.acquire(second.key);
    expect(await b.tryAcquire(keys.map((k) => k.key))).toBeNull();
    const err = await rejectionOf(b.acquire([third.key, second.key, first.key], { waitTimeoutMs: 200 }));
    expect(err).toBeInstanceOf(LockAcquireTimeoutError);
    expect(await a.inspect(first.key)).toBeNull();
    expect(await a.inspect(third.key)).toBeNull();
    expect(await stateOn(first.master, prefix, first.key)).toBe(false);
    expect(await stateOn(third.master, prefix, third.key)).toBe(false);

    const all = b.acquire(keys.map((k) => k.key), { waitTimeoutMs: 5_000 });
    await blocker.release();
    const handle = await all;
    expect([...handle.keys].sort()).toEqual(keys.map((k) => k.key).sort());
    for (const { key, master } of keys) {
      expect(await stateOn(master, prefix, key)).toBe(true);
      expect(await a.tryAcquire(key, { mode: 'read' })).toBeNull();
    }
    await handle.release();
    for (const { key } of keys) expect(await a.inspect(key)).toBeNull();
  });
});
