import { performance } from 'node:perf_hooks';
import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { LockConfigError } from '../../lib/errors/lock-config.error.js';
import { LockAcquireTimeoutError } from '../../lib/errors/lock-acquire-timeout.error.js';
import type { LockEngine } from '../../lib/locking/engine/lock-engine.js';
import { LockTestKit, redisNames, rejectionOf, sleep, track, until, uniquePrefix } from '../support/lock-test-kit.js';
import { slotOf } from '../../lib/redis/driver/slot.js';
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

  /** Two engines on Cluster clients with ioredis' own keyPrefix `app:`, on `prefix`. */
  function prefixedEngines(c: RedisCluster, prefix: string): LockEngine[] {
    kit.watchKeys(`app:${prefix}`, c.keysUnder);
    return [0, 1].map(() => {
      const client = c.client({ keyPrefix: 'app:' });
      kit.add(() => c.close(client));
      return kit.engine({ redis: client, keyPrefix: prefix });
    });
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

  /** `PUBSUB SHARDCHANNELS <prefix>*` on each master, by port. */
  async function shardChannels(c: RedisCluster, prefix: string): Promise<Map<number, string[]>> {
    const out = new Map<number, string[]>();
    for (const n of await c.masters()) {
      const client = new Redis({ host: n.host, port: n.port, maxRetriesPerRequest: 1 });
      try {
        out.set(n.port, (await client.call('PUBSUB', 'SHARDCHANNELS', `${prefix}*`)) as string[]);
      } finally {
        client.disconnect();
      }
    }
    return out;
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

  maybe(
    `two engines exclude each other on keys of different slots; a lock across slots is all or nothing${skipped}`,
    async () => {
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

      const all = b.acquire(
        keys.map((k) => k.key),
        { waitTimeoutMs: 5_000 },
      );
      await blocker.release();
      const handle = await all;
      expect([...handle.keys].sort()).toEqual(keys.map((k) => k.key).sort());
      for (const { key, master } of keys) {
        expect(await stateOn(master, prefix, key)).toBe(true);
        expect(await a.tryAcquire(key, { mode: 'read' })).toBeNull();
      }
      await handle.release();
      for (const { key } of keys) expect(await a.inspect(key)).toBeNull();
    },
  );

  maybe(
    `the Cluster ACL rule of docs/failure-modes.md gives the library every right it needs on a Cluster${skipped}`,
    async () => {
      const c = cluster!;
      const guide = readFileSync(new URL('../../docs/failure-modes.md', import.meta.url), 'utf8');
      const rule = guide
        .split('\n')
        .find((line) => line.startsWith('ACL SETUSER locks ') && line.includes('+spublish'));
      expect(rule).toBeDefined();
      const args = rule!.split(/\s+/).slice(2);
      for (const m of await c.masters()) await c.on(m, ['ACL', 'SETUSER', ...args]);
      try {
        const asLocks = () => {
          const client = c.client({ redisOptions: { username: 'locks', password: 'secret' } });
          kit.add(() => c.close(client));
          return kit.engine({ redis: client, keyPrefix: 'lock:' });
        };
        kit.watchKeys('lock:', c.keysUnder);
        const a = asLocks();
        const b = asLocks();
        // Contention with a wake-up on each master, renewals batched across slots, extend, inspect, forceRelease.
        const keys = await keyPerMaster(c, 'lock:');
        const extra = await Promise.all(Array.from({ length: 20 }, (_, i) => a.acquire(`acl:${i}`, { leaseMs: 300 })));
        for (const { key } of keys) {
          const held = await a.acquire(key, { leaseMs: 300 });
          const waiter = b.acquire(key, { waitTimeoutMs: 3_000 });
          await until(async () => ((await a.inspect(key))?.waiting ?? 0) === 1, 2_000, 'a waiter');
          await held.extend(1_000);
          await held.release();
          await (await waiter).release();
        }
        // Waiters on keys of several slots of each master, behind holds of a minute: their heartbeat goes out per node,
        // in the cross-slot scripts, and keeps them registered past a liveness lease (1 s).
        const blockers = [
          ...(await Promise.all(Array.from({ length: 12 }, (_, i) => a.acquire(`aclw:${i}`, { leaseMs: 60_000 })))),
          ...(await Promise.all(
            Array.from({ length: 12 }, (_, i) => a.acquirePermit(`aclp:${i}`, { limit: 1, leaseMs: 60_000 })),
          )),
        ];
        const waiters = [
          ...Array.from({ length: 12 }, (_, i) => b.acquire(`aclw:${i}`, { waitTimeoutMs: 30_000 })),
          ...Array.from({ length: 12 }, (_, i) => b.acquirePermit(`aclp:${i}`, { limit: 1, waitTimeoutMs: 30_000 })),
        ];
        const registered = async () => [
          ...(await Promise.all(Array.from({ length: 12 }, async (_, i) => (await a.inspect(`aclw:${i}`))?.waiting))),
          ...(await Promise.all(
            Array.from({ length: 12 }, async (_, i) => (await a.inspectPermits(`aclp:${i}`))?.waiting),
          )),
        ];
        await until(async () => (await registered()).every((n) => n === 1), 5_000, 'the waiters to register');
        await sleep(1_500);
        expect(await registered()).toEqual(Array(24).fill(1));
        await Promise.all(blockers.map((h) => h.release()));
        await Promise.all((await Promise.all(waiters)).map((h) => h.release()));
        expect(extra.every((h) => h.isHeld)).toBe(true); // past several of their leases: renewed by the watchdog
        await Promise.all(extra.map((h) => h.release()));
        await a.acquire('forced');
        expect(await b.forceRelease('forced')).toBe(true);
        expect(await a.ping()).toMatchObject({ command: true, subscriber: true });
        expect(kit.logger.lines.filter((l) => l.includes('permission') || l.includes('NOPERM'))).toEqual([]);
      } finally {
        await kit.closeAll();
        for (const m of await c.masters()) await c.on(m, ['ACL', 'DELUSER', 'locks']);
      }
    },
  );

  maybe(`slotOf agrees with CLUSTER KEYSLOT (hash tags, empty tags, several braces, UTF-8)${skipped}`, async () => {
    const c = cluster!;
    const [node] = c.nodes;
    const names = [
      'lock:{article:42}',
      'lock:{article:42}:ch',
      'plain',
      '{}x',
      'a{}{b}',
      'a{b}{c}',
      '{a{b}c}',
      'x{',
      'é{ü}:ch',
      'lock:{日本}',
    ];
    for (const name of names)
      expect([name, slotOf(name)]).toEqual([name, Number(await c.on(node, ['CLUSTER', 'KEYSLOT', name]))]);
  });

  maybe(
    `an ioredis without sharded pub/sub is refused for a Cluster with LockConfigError naming redis${skipped}`,
    () => {
      const c = cluster!;
      const client = c.client({ lazyConnect: true });
      kit.add(() => c.close(client));
      const own = Object.getOwnPropertyDescriptor(Redis.prototype, 'ssubscribe');
      Object.defineProperty(Redis.prototype, 'ssubscribe', { value: undefined, configurable: true, writable: true });
      try {
        let thrown: unknown;
        try {
          kit.engine({ redis: client });
        } catch (err) {
          thrown = err;
        }
        expect(thrown).toBeInstanceOf(LockConfigError);
        expect((thrown as LockConfigError).message).toMatch(/ssubscribe/);
        expect((thrown as LockConfigError).option).toBe('redis');
      } finally {
        if (own) Object.defineProperty(Redis.prototype, 'ssubscribe', own);
        else delete (Redis.prototype as { ssubscribe?: unknown }).ssubscribe;
      }
      expect(typeof Redis.prototype.ssubscribe).toBe('function');
    },
  );

  maybe(
    `wake-ups travel by sharded pub/sub: SSUBSCRIBE on the master of the lock's slot, SPUBLISH there, no PUBLISH${skipped}`,
    async () => {
      const c = cluster!;
      const prefix = uniquePrefix('cluster-sharded');
      const a = engine(c, prefix);
      const b = engine(c, prefix);
      const keys = await keyPerMaster(c, prefix);
      const before = { spublish: await c.callsPerNode(/^spublish$/), publish: await c.callsPerNode(/^publish$/) };

      for (const { key, master } of keys) {
        // A long lease: the waiter's own retry would come after 60 s, so only the wake-up can hand the lock over now.
        const held = await a.acquire(key, { leaseMs: 60_000 });
        const waiting = track(b.acquire(key, { waitTimeoutMs: 30_000 }));
        await until(async () => ((await a.inspect(key))?.waiting ?? 0) === 1, 5_000, 'the waiter to register');
        // The subscription lives on the lock's master only.
        const channels = await shardChannels(c, prefix);
        for (const [port, names] of channels) {
          expect(names.includes(redisNames(prefix, key).channel)).toBe(port === master.port);
        }
        await held.release();
        await until(() => waiting.settled, 10_000, 'the waiter to be woken');
        await (await waiting.promise).release();
      }

      const after = { spublish: await c.callsPerNode(/^spublish$/), publish: await c.callsPerNode(/^publish$/) };
      for (const { master } of keys)
        expect(after.spublish.get(master.port)! - before.spublish.get(master.port)!).toBeGreaterThan(0);
      for (const [port, calls] of after.publish) expect(calls - before.publish.get(port)!).toBe(0);
    },
  );

  maybe(
    `semaphores on every master: at most limit holders, a release wakes a waiter by SPUBLISH on the semaphore's master, permits renewed past their lease${skipped}`,
    async () => {
      const c = cluster!;
      const prefix = uniquePrefix('cluster-permits');
      const a = engine(c, prefix);
      const b = engine(c, prefix);
      const keys = await keyPerMaster(c, prefix);
      const before = await c.callsPerNode(/^spublish$/);
      for (const { key, master } of keys) {
        // Short leases renewed by the watchdog (PERMIT_RENEW_MANY, batched per node), held past several of them.
        const held = [
          await a.acquirePermit(key, { limit: 2, leaseMs: 600 }),
          await b.acquirePermit(key, { limit: 2, leaseMs: 600 }),
        ];
        expect(await a.tryAcquirePermit(key, { limit: 2 })).toBeNull();
        const waiting = track(b.acquirePermit(key, { limit: 2, waitTimeoutMs: 30_000, leaseMs: 600 }));
        await until(async () => ((await a.inspectPermits(key))?.waiting ?? 0) === 1, 5_000, 'the waiter to register');
        await sleep(1_500);
        expect(held.every((p) => p.isHeld)).toBe(true);
        expect((await a.inspectPermits(key))?.used).toBe(2);
        // The waiter's own retry would come at the first lease's end: the wake-up hands the permit over first.
        const releasedAt = performance.now();
        await held[0].release();
        await until(() => waiting.settled, 10_000, 'the waiter to be woken');
        expect(performance.now() - releasedAt).toBeLessThan(500);
        const got = await waiting.promise;
        expect(got.fencingToken).toBeGreaterThan(held[1].fencingToken);
        expect(before.has(master.port)).toBe(true);
        await got.release();
        await held[1].release();
      }
      const after = await c.callsPerNode(/^spublish$/);
      for (const { master } of keys) expect(after.get(master.port)! - before.get(master.port)!).toBeGreaterThan(0);
    },
  );

  maybe(
    `on Cluster clients with ioredis' own keyPrefix, the keys get that prefix and a release still wakes the waiter${skipped}`,
    async () => {
      const c = cluster!;
      const prefix = uniquePrefix('cluster-kp');
      const [a, b] = prefixedEngines(c, prefix);
      for (const { key, master } of await keyPerMaster(c, `app:${prefix}`)) {
        const held = await a.acquire(key, { leaseMs: 60_000 });
        expect(await stateOn(master, `app:${prefix}`, key)).toBe(true);
        const waiting = track(b.acquire(key, { waitTimeoutMs: 30_000 }));
        await until(async () => ((await a.inspect(key))?.waiting ?? 0) === 1, 5_000, 'the waiter to register');
        const released = performance.now();
        await held.release();
        await until(() => waiting.settled, 10_000, 'the waiter to be woken');
        // Woken by the release, not by its own retry (the 60 s lease) or its 30 s wait running out.
        expect(waiting.at! - released).toBeLessThan(2_000);
        await (await waiting.promise).release();
      }
    },
  );

  maybe(
    `on Cluster clients with ioredis' own keyPrefix, the calls batched per node (renewals, waiters' heartbeat) find the prefixed keys${skipped}`,
    async () => {
      const c = cluster!;
      const prefix = uniquePrefix('cluster-kp-batch');
      const [a, b] = prefixedEngines(c, prefix);
      const lost: string[] = [];
      a.on('lost', (e) => lost.push(e.key));
      // Keys of some 30 slots, ten per master, for each use: every batch spans several slots of each node. ioredis
      // prefixes the KEYS of a script call, not its ARGV, where a cross-slot script finds its key names.
      const names = (tag: string) => Array.from({ length: 30 }, (_, i) => `${tag}:${i}`);
      const [renewedLocks, renewedPermits, waitedLocks, waitedPermits] = ['rl', 'rp', 'wl', 'wp'].map(names);
      expect(new Set(renewedLocks.map((k) => slotOf(`app:${redisNames(prefix, k).state}`))).size).toBeGreaterThan(20);
      // Short leases, renewed every 200 ms; the waited-on keys held for a minute (their waiters' own retries come
      // then).
      const short = [
        ...(await Promise.all(renewedLocks.map((key) => a.acquire(key, { leaseMs: 600 })))),
        ...(await Promise.all(renewedPermits.map((key) => a.acquirePermit(key, { limit: 1, leaseMs: 600 })))),
      ];
      const long = [
        ...(await Promise.all(waitedLocks.map((key) => a.acquire(key, { leaseMs: 60_000 })))),
        ...(await Promise.all(waitedPermits.map((key) => a.acquirePermit(key, { limit: 1, leaseMs: 60_000 })))),
      ];
      let contended = 0;
      b.on('contended', () => contended++);
      const waits = [
        ...waitedLocks.map((key) => track(b.acquire(key, { fair: true, waitTimeoutMs: 30_000 }))),
        ...waitedPermits.map((key) => track(b.acquirePermit(key, { limit: 1, fair: true, waitTimeoutMs: 30_000 }))),
      ];
      await until(() => contended === waits.length, 5_000, 'the waiters to register');
      // The fair queues (member -> arrival), read as Redis names them.
      const raw = c.client();
      kit.add(() => c.close(raw));
      const queues = () =>
        Promise.all(
          [...waitedLocks, ...waitedPermits].map(
            (k) =>
              raw.call('ZRANGE', `app:${redisNames(prefix, k).queue}`, '0', '-1', 'WITHSCORES') as Promise<unknown[]>,
          ),
        );
      const arrivals = await queues();
      expect(arrivals.every((q) => q.flat().length === 2)).toBe(true);
      // Past several leases and a waiter's liveness lease (1 s). A heartbeat that missed the registrations would answer
      // 'attempt' for every waiter, and each would attempt again (registering afresh) every round: some 60 calls a
      // round
      // instead of one per kind and master.
      const masters = await c.masters();
      const before = await c.callsPerNode(/^(evalsha|eval)$/);
      await sleep(2_000);
      const after = await c.callsPerNode(/^(evalsha|eval)$/);
      const calls = masters.reduce((n, m) => n + after.get(m.port)! - before.get(m.port)!, 0);
      // Per kind and master: a heartbeat call every 150 ms at most and a renewal call every 200 ms, 2 rounds of slack
      // each.
      expect(calls).toBeLessThanOrEqual(2 * masters.length * (2_000 / 150 + 2 + 2_000 / 200 + 2));
      expect(await queues()).toEqual(arrivals);
      expect(lost).toEqual([]);
      expect([...short, ...long].every((h) => h.isHeld)).toBe(true);
      expect(waits.filter((w) => w.settled)).toEqual([]);
      expect(await Promise.all(waitedLocks.map(async (key) => (await b.inspect(key))?.waiting))).toEqual(
        waitedLocks.map(() => 1),
      );
      expect(await Promise.all(waitedPermits.map(async (key) => (await b.inspectPermits(key))?.waiting))).toEqual(
        waitedPermits.map(() => 1),
      );
      await Promise.all([...short, ...long].map((h) => h.release()));
      await Promise.all(waits.map(async (w) => (await w.promise).release()));
    },
    30_000,
  );

  // Renewals batched per node (a cross-slot script per chunk of a master's holds), for locks and permits alike.
  const renewed: readonly {
    kind: string;
    take: (
      e: LockEngine,
      key: string,
    ) => Promise<{ readonly isHeld: boolean; readonly signal: AbortSignal; release(): Promise<boolean> }>;
  }[] = [
    { kind: 'holds', take: (e, key) => e.acquire(key, { leaseMs: 3_000 }) },
    { kind: 'permits', take: (e, key) => e.acquirePermit(key, { limit: 3, leaseMs: 3_000 }) },
  ];
  for (const { kind, take } of renewed) {
    maybe(
      `the watchdog renews 2,000 ${kind} over 3 masters in a few script calls per node and round, none lost${skipped}`,
      async () => {
        const c = cluster!;
        const prefix = uniquePrefix(`cluster-renew-${kind}`);
        const a = engine(c, prefix);
        const lost: string[] = [];
        a.on('lost', (e) => lost.push(e.key));
        // Unrelated keys: nearly every one on a slot of its own, spread over the three masters.
        const keys = Array.from({ length: 2_000 }, (_, i) => `renew:${i}`);
        expect(new Set(keys.map((k) => slotOf(redisNames(prefix, k).state))).size).toBeGreaterThan(1_500);
        const held = [];
        for (let i = 0; i < keys.length; i += 200)
          held.push(...(await Promise.all(keys.slice(i, i + 200).map((key) => take(a, key)))));
        const masters = await c.masters();
        // Let the watchdog's rounds line up (the holds were acquired over some time), then count one window of rounds.
        await sleep(3_500);
        const before = await c.callsPerNode(/^(evalsha|eval)$/);
        const windowMs = 6_000;
        await sleep(windowMs);
        const after = await c.callsPerNode(/^(evalsha|eval)$/);
        // One round every leaseMs / 3 = 1 s: about 6 rounds in the window, 2 more for slack. Per node and round at most
        // ceil(n / 200) calls for its n holds, so at most masters x ceil(2,000 / 200) = 30 per round; one call per
        // hold,
        // or per slot, would be some 12,000 in the window.
        const rounds = windowMs / 1_000 + 2;
        let total = 0;
        for (const m of masters) {
          const calls = after.get(m.port)! - before.get(m.port)!;
          expect(calls).toBeGreaterThan(0); // every master renews its share
          total += calls;
        }
        expect(total).toBeLessThanOrEqual(masters.length * Math.ceil(keys.length / 200) * rounds);

        expect(lost).toEqual([]);
        expect(held.every((h) => h.isHeld && !h.signal.aborted)).toBe(true);
        const states = (await c.keysUnder(prefix)).filter((k) => k.endsWith('}'));
        expect(states.length).toBe(keys.length);
        for (let i = 0; i < held.length; i += 200)
          expect(await Promise.all(held.slice(i, i + 200).map((h) => h.release()))).toEqual(Array(200).fill(true));
      },
      60_000,
    );
  }

  // The waiters' heartbeat batched per node too (a cross-slot script per chunk of a master's waiters), for locks and
  // permits alike: fair waiters behind holds with a long lease, so nothing but the heartbeat runs while they wait.
  const waitedOn: readonly {
    kind: string;
    take: (e: LockEngine, key: string) => Promise<{ release(): Promise<boolean> }>;
    wait: (e: LockEngine, key: string) => Promise<{ release(): Promise<boolean> }>;
    waiting: (e: LockEngine, key: string) => Promise<number>;
  }[] = [
    {
      kind: 'locks',
      take: (e, key) => e.acquire(key, { leaseMs: 60_000 }),
      wait: (e, key) => e.acquire(key, { fair: true, leaseMs: 60_000, waitTimeoutMs: 60_000 }),
      waiting: async (e, key) => (await e.inspect(key))?.waiting ?? 0,
    },
    {
      kind: 'permits',
      take: (e, key) => e.acquirePermit(key, { limit: 1, leaseMs: 60_000 }),
      wait: (e, key) => e.acquirePermit(key, { limit: 1, fair: true, leaseMs: 60_000, waitTimeoutMs: 60_000 }),
      waiting: async (e, key) => (await e.inspectPermits(key))?.waiting ?? 0,
    },
  ];
  for (const { kind, take, wait, waiting } of waitedOn) {
    maybe(
      `the waiters' heartbeat keeps 800 ${kind} waiters over 3 masters registered in a few script calls per node and round; a release, or the heartbeat passing over a dead waiter, hands over at once on any slot${skipped}`,
      async () => {
        const c = cluster!;
        const prefix = uniquePrefix(`cluster-heartbeat-${kind}`);
        const a = engine(c, prefix);
        const b = engine(c, prefix);
        // A third engine whose connection is cut while its waiters are first in line on two keys: a dead process.
        const deadClient = c.client();
        kit.add(() => c.close(deadClient));
        const dead = kit.engine({ redis: deadClient, keyPrefix: prefix });
        const keys = Array.from({ length: 800 }, (_, i) => `wait:${i}`);
        const slots = new Set(keys.map((k) => slotOf(redisNames(prefix, k).state)));
        expect(slots.size).toBeGreaterThan(600);
        // Two keys of two slots that one master serves, for the dead waiter.
        const masterPort = async (key: string) => (await c.masterFor(redisNames(prefix, key).state)).port;
        const [x1] = keys;
        const x1Master = await masterPort(x1);
        let x2 = '';
        for (const key of keys.slice(1)) {
          if (
            slotOf(redisNames(prefix, key).state) !== slotOf(redisNames(prefix, x1).state) &&
            (await masterPort(key)) === x1Master
          ) {
            x2 = key;
            break;
          }
        }
        const deadKeys = [x1, x2];

        const held = new Map<string, { release(): Promise<boolean> }>();
        for (let i = 0; i < keys.length; i += 200) {
          const part = keys.slice(i, i + 200);
          (await Promise.all(part.map((key) => take(a, key)))).forEach((h, j) => held.set(part[j], h));
        }
        let deadWaiting = 0;
        dead.on('contended', () => deadWaiting++);
        // Its waits fail once its connection is cut, or end when the kit closes it (`track` handles the rejection).
        for (const key of deadKeys) track(wait(dead, key));
        await until(() => deadWaiting === 2, 5_000, 'the dead engine to wait on its two keys');
        let contended = 0;
        b.on('contended', () => contended++);
        const waits = new Map(keys.map((key) => [key, track(wait(b, key))]));
        await until(() => contended === keys.length, 20_000, `${keys.length} waiters to register`);

        // Several liveness leases of heartbeats, counted over a window: every script call in it is a heartbeat (the
        // holds' 60 s leases are renewed every 20 s: at most one renewal round falls in it).
        await sleep(1_000);
        const masters = await c.masters();
        const before = await c.callsPerNode(/^(evalsha|eval)$/);
        const windowMs = 3_000;
        await sleep(windowMs);
        const after = await c.callsPerNode(/^(evalsha|eval)$/);
        // One round every WAITER_HEARTBEAT_MS (150 ms) at most, 2 more for slack. Per node and round at most ceil(n /
        // 200)
        // calls for its n waiters: at most masters x ceil(800 / 200) = 12 per round for b, 1 for the dead engine's two
        // keys, and one renewal round of the holds (12 calls). One call per slot would be some 700 per round.
        const perRound = masters.length * Math.ceil(keys.length / 200);
        const bound = (perRound + 1) * (windowMs / 150 + 2) + perRound;
        let total = 0;
        for (const m of masters) {
          const calls = after.get(m.port)! - before.get(m.port)!;
          expect(calls).toBeGreaterThan(0); // every master keeps its share registered
          total += calls;
        }
        expect(total).toBeLessThanOrEqual(bound);

        // Past several liveness leases every registration is still there, and nobody was let in.
        for (let i = 0; i < keys.length; i += 200) {
          const counts = await Promise.all(keys.slice(i, i + 200).map((key) => waiting(a, key)));
          expect(counts).toEqual(keys.slice(i, i + 200).map((key) => (deadKeys.includes(key) ? 2 : 1)));
        }
        expect([...waits.values()].filter((w) => w.settled)).toEqual([]);

        // A release on each master hands over at once (the waiter's own retry would come after a minute).
        const byMaster = new Map<number, string>();
        for (const key of keys.filter((k) => !deadKeys.includes(k))) {
          const port = await masterPort(key);
          if (!byMaster.has(port)) byMaster.set(port, key);
          if (byMaster.size === masters.length) break;
        }
        for (const key of byMaster.values()) {
          const releasedAt = performance.now();
          await held.get(key)!.release();
          held.delete(key);
          await until(() => waits.get(key)!.settled, 5_000, `the waiter on ${key} to be woken`);
          // A wake-up (about a millisecond here); the waiter's own retry would come after a minute. Room for a loaded
          // CI.
          expect(waits.get(key)!.at! - releasedAt).toBeLessThan(1_500);
        }

        // The dead engine's waiters are first on x1 and x2: the releases name them, their claim windows pass, and b's
        // heartbeat (one call for its waiters of that master's slots) passes over them and names b's waiters, by
        // SPUBLISH on each key's channel from inside the cross-slot script.
        deadClient.disconnect();
        const listener = new Redis({ host: '127.0.0.1', port: x1Master, maxRetriesPerRequest: 1 });
        kit.add(async () => listener.disconnect());
        const heard = new Map<string, string[]>(deadKeys.map((key) => [redisNames(prefix, key).channel, []]));
        listener.on('smessage', (channel: string, message: string) => heard.get(channel)?.push(message));
        // SSUBSCRIBE takes the channels of one slot: one call each.
        for (const channel of heard.keys()) await listener.ssubscribe(channel);
        const releasedAt = performance.now();
        await Promise.all(deadKeys.map(async (key) => held.get(key)!.release()));
        deadKeys.forEach((key) => held.delete(key));
        await until(
          () => deadKeys.every((key) => waits.get(key)!.settled),
          5_000,
          'the waiters behind the dead one to be woken',
        );
        // Claim window (250 ms) + a heartbeat period (150 ms) + one heartbeat round over 800 waiters; room for a loaded
        // CI.
        for (const key of deadKeys) expect(waits.get(key)!.at! - releasedAt).toBeLessThan(2_000);
        // Each channel: the release named the dead waiter, then the heartbeat named b's.
        await until(() => [...heard.values()].every((m) => m.length >= 2), 2_000, 'both wake-ups on each channel');
        for (const messages of heard.values()) {
          expect(messages.every((m) => m.startsWith('f:'))).toBe(true);
          expect(new Set(messages).size).toBe(messages.length);
        }

        // Hand the rest over and let go.
        await Promise.all([...held.values()].map((h) => h.release()));
        for (let i = 0; i < keys.length; i += 200) {
          const got = await Promise.all(keys.slice(i, i + 200).map((key) => waits.get(key)!.promise));
          await Promise.all(got.map((h) => h.release()));
        }
      },
      90_000,
    );
  }

  maybe(
    `a heartbeat batch that a stale slot map sends to a node no longer serving a slot of it goes again per slot: every waiter answered${skipped}`,
    async () => {
      const c = cluster!;
      const prefix = uniquePrefix('cluster-stale');
      const a = engine(c, prefix);
      const b = engine(c, prefix);
      const [{ key: movedKey, master: source }] = await keyPerMaster(c, prefix);
      const slot = slotOf(redisNames(prefix, movedKey).state);
      let staysKey = '';
      for (let i = 0; !staysKey; i++) {
        const key = `o${i}`;
        if (
          slotOf(redisNames(prefix, key).state) !== slot &&
          (await c.masterFor(redisNames(prefix, key).state)).port === source.port
        )
          staysKey = key;
      }
      const target = (await c.masters()).find((m) => m.port !== source.port)!;
      // b waits on both keys (fair: its waiter ids are the queues' members), behind holds of a minute.
      const held = await Promise.all([movedKey, staysKey].map((key) => a.acquire(key, { leaseMs: 60_000 })));
      const waits = [movedKey, staysKey].map((key) => track(b.acquire(key, { fair: true, waitTimeoutMs: 60_000 })));
      const raw = c.client();
      kit.add(() => c.close(raw));
      const waiterOn = async (key: string) =>
        String(((await raw.call('ZRANGE', redisNames(prefix, key).queue, '0', '0')) as string[])[0] ?? '').slice(2);
      await until(
        async () => (await waiterOn(movedKey)) !== '' && (await waiterOn(staysKey)) !== '',
        5_000,
        'the waiters to register',
      );
      const ids = new Map([movedKey, staysKey].map((key) => [key, '']));
      for (const key of ids.keys()) ids.set(key, await waiterOn(key));
      // Two stores on clients of their own, with no subscription (which would refresh their slot maps when the move
      // drops it), their maps loaded before the move.
      const stores = [0, 1].map(() => {
        const client = c.client();
        kit.add(() => c.close(client));
        return kit.store(b, client);
      });
      for (const store of stores) for (const key of ids.keys()) await store.inspect(store.lock(key));
      await c.moveSlot(redisNames(prefix, movedKey).state, target);

      const call = (store: (typeof stores)[number], key: string) => ({
        lock: store.lock(key),
        mode: 'write' as const,
        waiterId: ids.get(key)!,
        fair: true,
      });
      // The staying key first: the source runs the batch and stops at the moved key ('non local key', after renewing
      // the
      // first waiter: renewed again per slot). The moved key first: the source answers MOVED, the client follows it to
      // the target, which stops at the staying key. Either way every waiter is answered by its own slot's script.
      expect(await stores[0].keepWaiting([call(stores[0], staysKey), call(stores[0], movedKey)])).toEqual([
        'waiting',
        'waiting',
      ]);
      expect(await stores[1].keepWaiting([call(stores[1], movedKey), call(stores[1], staysKey)])).toEqual([
        'waiting',
        'waiting',
      ]);
      expect(waits.filter((w) => w.settled)).toEqual([]);

      await Promise.all(held.map((h) => h.release()));
      await Promise.all(waits.map(async (w) => (await w.promise).release()));
    },
    30_000,
  );

  maybe(
    `when a lock's slot moves to another master, renewals, the waiters' heartbeat and the waiter's subscription follow it${skipped}`,
    async () => {
      const c = cluster!;
      const prefix = uniquePrefix('cluster-move');
      const a = engine(c, prefix);
      const b = engine(c, prefix);
      const lost: string[] = [];
      a.on('lost', (e) => lost.push(e.key));
      const [{ key: waitedKey, master: source }] = await keyPerMaster(c, prefix);
      const slot = slotOf(redisNames(prefix, waitedKey).state);
      // Another lock of the same slot (renewed while the slot moves), and one of another slot of the same master, so
      // the source's renewal batch spans two slots.
      let sameSlot = '';
      for (let i = 0; !sameSlot; i++) if (slotOf(redisNames(prefix, `s${i}`).state) === slot) sameSlot = `s${i}`;
      const otherSlotOfSource = async (tag: string) => {
        for (let i = 0; ; i++) {
          const key = `${tag}${i}`;
          if (
            slotOf(redisNames(prefix, key).state) !== slot &&
            (await c.masterFor(redisNames(prefix, key).state)).port === source.port
          )
            return key;
        }
      };
      const stays = await otherSlotOfSource('o');
      // A second waited lock, of another slot of the source: the waiters' heartbeat batch spans two slots too.
      const alsoWaitedKey = await otherSlotOfSource('q');
      const target = (await c.masters()).find((m) => m.port !== source.port)!;

      // A long lease on the waited lock: the waiter's own retry would come after a minute, so only a wake-up can hand
      // the lock over during the test.
      const waited = await a.acquire(waitedKey, { leaseMs: 60_000 });
      const moving = await a.acquire(sameSlot, { leaseMs: 1_500 });
      const staying = await a.acquire(stays, { leaseMs: 1_500 });
      const alsoWaited = await a.acquire(alsoWaitedKey, { leaseMs: 60_000 });
      // b's heartbeat batch for the source spans both slots until the move. (The move drops b's subscription on the
      // source, which makes b refresh its slot map at once, so its heartbeat seldom meets the stale map: the test above
      // sends a batch on a stale map on purpose.)
      const alsoWaiting = track(b.acquire(alsoWaitedKey, { waitTimeoutMs: 60_000 }));
      await until(
        async () => ((await a.inspect(alsoWaitedKey))?.waiting ?? 0) === 1,
        5_000,
        'the other waiter to register',
      );
      const waiting = track(b.acquire(waitedKey, { waitTimeoutMs: 60_000 }));
      await until(async () => ((await a.inspect(waitedKey))?.waiting ?? 0) === 1, 5_000, 'the waiter to register');

      const logged = kit.logger.lines.length;
      await c.moveSlot(redisNames(prefix, waitedKey).state, target);
      expect(await stateOn(target, prefix, sameSlot)).toBe(true);

      // Several leases later both short holds are still held, and no renewal call failed: the client's slot map was
      // stale (it learns of a move by a MOVED reply), so the first batch met the moved slot and was sent again per
      // slot.
      // And both waiters are still registered, past several liveness leases (1 s) renewed by the heartbeat, though
      // their
      // own retries would come after a minute.
      await sleep(4_000);
      expect(lost).toEqual([]);
      expect((await a.inspect(waitedKey))?.waiting).toBe(1);
      expect((await a.inspect(alsoWaitedKey))?.waiting).toBe(1);
      expect(kit.logger.lines.slice(logged).filter((l) => l.includes('renewal'))).toEqual([]);
      expect(moving.signal.aborted || staying.signal.aborted).toBe(false);
      expect((await b.inspect(sameSlot))?.holders.length).toBe(1);
      expect(await stateOn(target, prefix, sameSlot)).toBe(true);

      // The subscription moved to the target, and a release there wakes the waiter.
      await until(
        async () => (await shardChannels(c, prefix)).get(target.port)!.includes(redisNames(prefix, waitedKey).channel),
        5_000,
        'the subscription to move',
      );
      expect((await shardChannels(c, prefix)).get(source.port)).toEqual([redisNames(prefix, alsoWaitedKey).channel]);
      await waited.release();
      await until(() => waiting.settled, 10_000, 'the waiter to be woken by the release');
      await (await waiting.promise).release();
      await alsoWaited.release();
      await until(() => alsoWaiting.settled, 10_000, 'the other waiter to be woken by the release');
      await (await alsoWaiting.promise).release();
      await Promise.all([moving.release(), staying.release()]);
    },
    60_000,
  );
});
