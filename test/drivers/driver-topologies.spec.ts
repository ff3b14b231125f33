import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis as Valkey } from 'iovalkey';
import { createSentinel } from 'redis';
import { createSentinel as createSentinel6 } from 'redis6';
import { LockConfigError } from '../../lib/errors/lock-config.error.js';
import type { LockEngine } from '../../lib/locking/engine/lock-engine.js';
import { RedisProcess } from '../support/faults.js';
import { DRIVERS, openDriverClient } from '../support/driver-clients.js';
import type { DriverClient } from '../support/driver-clients.js';
import { LockTestKit, sleep, uniquePrefix, until } from '../support/lock-test-kit.js';
import { RedisSentinelSet } from '../support/topologies.js';

/*
 * The topologies the drivers' clients have beside a Cluster (the semantic suite runs every driver on a real Redis
 * Cluster): quorum mode over three independent masters reached through three different client libraries, and Redis
 * Sentinel through node-redis (`createSentinel`) and iovalkey (`sentinels` options), across a failover. Valkey
 * GLIDE has no Sentinel support.
 */

describe('quorum mode with a client of each library per master', () => {
  const kit = new LockTestKit();
  let masters: RedisProcess[] = [];
  const clients: DriverClient[] = [];

  beforeAll(async () => {
    // One master per client library, ioredis (a URL) included: five, a majority of three.
    masters = await Promise.all([...DRIVERS, 'ioredis'].map(() => RedisProcess.start()));
  }, 30_000);
  afterEach(() => kit.closeAll());
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await Promise.all(masters.map((m) => m.dispose()));
  });

  const engineOnAll = async (prefix: string): Promise<LockEngine> => {
    const opened = await Promise.all(DRIVERS.map((d, i) => openDriverClient(d, { url: masters[i].url })));
    clients.push(...opened);
    const redis = [...opened.map((c) => c.client), masters[DRIVERS.length].url];
    return kit.engine({ redis: redis as never, keyPrefix: prefix });
  };

  it('grants on a majority, excludes a second engine, and wakes it on release', async () => {
    const prefix = uniquePrefix('quorum-drivers');
    const a = await engineOnAll(prefix);
    const b = await engineOnAll(prefix);
    const held = await a.acquire('report:1');
    expect(await b.tryAcquire('report:1')).toBeNull();
    const waiting = b.acquire('report:1', { waitTimeoutMs: 5_000 });
    await sleep(50);
    await held.release();
    const next = await waiting;
    expect(next.fencingToken).toBeGreaterThan(held.fencingToken);
    await next.release();
  });

  it('refuses a Cluster client among the masters, naming redis', async () => {
    const cluster = { isCluster: true, status: 'wait', duplicate() {}, evalsha() {}, pipeline() {}, sendCommand() {} };
    let thrown: unknown;
    try {
      kit.engine({ redis: [masters[0].url, masters[1].url, cluster] as never });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(LockConfigError);
    expect((thrown as Error).message).toMatch(/entry 2 is a Cluster client/);
  });
});

/** A connected-to-be node-redis sentinel client of major 5 or 6 (the two have no common call signature). */
interface SentinelClient {
  on(event: 'error', listener: () => void): unknown;
  connect(): Promise<unknown>;
  close(): Promise<unknown>;
}
type SentinelOptions = { name: string; sentinelRootNodes: { host: string; port: number }[] };
const SENTINELS: readonly (readonly [string, (options: SentinelOptions) => SentinelClient])[] = [
  ['node-redis', (options) => createSentinel(options)],
  ['node-redis6', (options) => createSentinel6(options)],
];

describe.each(SENTINELS)('Redis Sentinel through %s and iovalkey, across a failover', (_, makeSentinel) => {
  const kit = new LockTestKit();
  let set: RedisSentinelSet;

  beforeAll(async () => {
    set = await RedisSentinelSet.start();
  }, 60_000);
  afterEach(() => kit.closeAll());
  afterAll(() => set?.dispose());

  it('locks through each client, and after the master is SIGKILLed locks through the new one', async () => {
    const sentinel = makeSentinel({
      name: set.redisOptions().name as string,
      sentinelRootNodes: set.sentinels.map(({ host, port }) => ({ host, port })),
    });
    sentinel.on('error', () => undefined);
    await sentinel.connect();
    kit.add(() => sentinel.close().catch(() => undefined));
    const valkey = new Valkey({ sentinels: [...set.sentinels], name: set.redisOptions().name });
    valkey.on('error', () => undefined);
    kit.add(() => valkey.quit().catch(() => valkey.disconnect()));
    const prefix = uniquePrefix('sentinel-drivers');
    const viaNodeRedis = kit.engine({ redis: sentinel as never, keyPrefix: prefix, waitTimeoutMs: 20_000 });
    const viaValkey = kit.engine({ redis: valkey as never, keyPrefix: prefix, waitTimeoutMs: 20_000 });
    kit.watchKeys(prefix, async () => []);

    const first = await viaNodeRedis.acquire('job:1');
    expect(await viaValkey.tryAcquire('job:1')).toBeNull();
    await first.release();
    const second = await viaValkey.acquire('job:1');
    await second.release();

    await set.killMaster();
    await set.waitForFailover(30_000);
    // Both clients follow the sentinels to the new master: a lock taken through one excludes the other there.
    const after = await viaValkey.acquire('job:2');
    // node-redis may still be finding the new master: ask until it answers, then the lock must be busy.
    let seen: 'busy' | 'free' | 'no answer' = 'no answer';
    await until(async () => {
      seen = await viaNodeRedis.tryAcquire('job:2').then(
        (h) => (h === null ? 'busy' : 'free'),
        () => 'no answer' as const,
      );
      return seen !== 'no answer';
    }, 20_000);
    expect(seen).toBe('busy');
    const waiting = viaNodeRedis.acquire('job:2');
    await after.release();
    await (await waiting).release();
  }, 90_000);
});
