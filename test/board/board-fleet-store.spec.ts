// What the board's fleet samples cost and how they fail: one small record per instance in Redis, bounded and expiring,
// written off the lock path within commandTimeoutMs; a board that cannot read them says so. On a server and a Cluster.
import { performance } from 'node:perf_hooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { FleetFeed } from '../../lib/board/fleet-feed.js';
import { fleetNames } from '../../lib/board/fleet-store.js';
import type { LockEngine } from '../../lib/locking/engine/lock-engine.js';
import { LockTestKit, sleep, until, uniquePrefix } from '../support/lock-test-kit.js';
import { RedisProxy } from '../support/redis-proxy.js';
import { redisUrl } from '../support/redis.js';
import { RedisCluster, topologySupport } from '../support/topologies.js';

const unsupported = await topologySupport();
const onCluster = unsupported ? it.skip : it;

describe('board fleet samples in Redis', () => {
  const kit = new LockTestKit();
  let cluster: RedisCluster | undefined;
  beforeAll(async () => {
    if (!unsupported) cluster = await RedisCluster.start();
  }, 30_000);
  afterEach(() => kit.closeAll());
  afterAll(() => cluster?.dispose());

  /** A feed sampling `engine` every `sampleMs`, withdrawn (its record removed) when the test ends. */
  function feed(engine: LockEngine, sampleMs = 100): FleetFeed {
    const f = new FleetFeed(sampleMs, 50);
    f.attach(engine);
    kit.add(() => f.detach());
    return f;
  }

  it('one bounded record per instance that expires a few intervals after its last write, and is removed on close', async () => {
    const a = kit.engine();
    const b = kit.peer(a);
    const redis = kit.redis();
    const names = fleetNames(a.settings.keyPrefix);
    const fa = feed(a);
    feed(b);
    const held = await b.acquire('x');
    await until(
      async () => (await fa.view()).instances.length === 2 && (await fa.view()).total.at(-1)!.holds.lock === 1,
      3_000,
      'both instances, the hold counted',
    );
    const keys = (await redis.keys(`${a.settings.keyPrefix}board:*`)).sort();
    expect(keys).toEqual(
      [
        names.index,
        names.info(a.instanceId),
        names.info(b.instanceId),
        names.samples(a.instanceId),
        names.samples(b.instanceId),
      ].sort(),
    );
    // Expires 3 intervals plus commandTimeoutMs after the last write.
    const ttl = await redis.pttl(names.samples(a.instanceId));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(3 * 100 + a.settings.commandTimeoutMs);
    // Capped to the window's samples; each sample is a small JSON array.
    const sample = await redis.lindex(names.samples(a.instanceId), -1);
    expect(JSON.parse(sample!)).toHaveLength(16);
    expect(Buffer.byteLength(sample!)).toBeLessThan(80);
    await held.release();

    // An instance that dies (no withdraw) drops out of the fleet once its record expired.
    const c = kit.peer(a, { commandTimeoutMs: 100 });
    const dying = new FleetFeed(100, 50);
    dying.attach(c);
    await until(async () => (await fa.view()).instances.length === 3, 3_000, 'the third instance');
    (dying as unknown as { history: { detach(): void } }).history.detach(); // stops writing, as a killed process
    await until(async () => (await fa.view()).instances.length === 2, 2_000, 'the dead instance gone');
    expect(await redis.exists(names.samples(c.instanceId), names.info(c.instanceId))).toBe(0);
  }, 20_000);

  it('writes are bounded and never break the board: Redis away, the view says why; back, the gap is filled', async () => {
    const proxy = await RedisProxy.start(redisUrl());
    kit.add(() => proxy.close());
    // Options, not the proxy's URL: the kit then looks for leftovers on the real server, not through the proxy.
    const { hostname: host, port } = new URL(proxy.url);
    const a = kit.engine({ redis: { host, port: Number(port) }, commandTimeoutMs: 200, keyPrefix: uniquePrefix('ff') });
    const f = feed(a);
    await until(
      async () => (await f.view()).error === undefined && (await f.view()).instances.length === 1,
      3_000,
      'read',
    );
    proxy.cut({ refuse: true });
    const held = a.acquire('during', { waitTimeoutMs: 0 }).catch(() => undefined);
    await sleep(400);
    const started = performance.now();
    const view = await f.view();
    expect(performance.now() - started).toBeLessThan(200 + 300);
    expect(view.error).toMatch(/could not be (read|written)/);
    expect(view.instances).toHaveLength(1); // this instance, from its own memory
    const outageFrom = Date.now() - 400;
    proxy.heal();
    await held;
    await until(async () => (await f.view()).error === undefined, 5_000, 'the fleet read again');
    // The samples taken while Redis was away were written once it was back.
    const redis = kit.redis();
    const list = await redis.lrange(fleetNames(a.settings.keyPrefix).samples(a.instanceId), 0, -1);
    const times = list.map((s) => (JSON.parse(s) as number[])[0]);
    expect(times.some((t) => t >= outageFrom && t <= outageFrom + 400)).toBe(true);
  }, 20_000);

  onCluster(
    'on a Cluster: every name of the fleet in one slot; three instances read as one fleet',
    async () => {
      const c = cluster!;
      const prefix = uniquePrefix('fleetc');
      kit.watchKeys(prefix, c.keysUnder);
      const engines = [0, 1, 2].map(() => {
        const client = c.client();
        kit.add(() => c.close(client));
        return kit.engine({ redis: client, keyPrefix: prefix });
      });
      const feeds = engines.map((e) => feed(e));
      const holds = await Promise.all(engines.map((e, i) => e.acquire(`k${i}`)));
      await until(
        async () => {
          const v = await feeds[0].view();
          return v.error === undefined && v.instances.length === 3 && v.total.at(-1)!.holds.lock === 3;
        },
        5_000,
        'the fleet of three on the Cluster',
      );
      const names = fleetNames(prefix);
      const masters = new Set(
        await Promise.all(
          [names.index, names.samples(engines[1].instanceId), names.info(engines[2].instanceId)].map(
            async (n) => (await c.masterFor(n)).port,
          ),
        ),
      );
      expect(masters.size).toBe(1);
      await Promise.all(holds.map((h) => h.release()));
    },
    20_000,
  );
});
