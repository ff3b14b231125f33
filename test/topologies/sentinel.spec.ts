import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { LockError } from '../../lib/errors/lock.error.js';
import { LockLostError } from '../../lib/errors/lock-lost.error.js';
import { LockUnavailableError } from '../../lib/errors/lock-unavailable.error.js';
import type { LockEngine } from '../../lib/locking/engine/lock-engine.js';
import type { PermitHandle } from '../../lib/types/permit.types.js';
import {
  LockTestKit,
  keysUnder,
  redisNames,
  rejectionOf,
  sleep,
  track,
  uniquePrefix,
  until,
} from '../support/lock-test-kit.js';
import { RedisSentinelSet, topologySupport } from '../support/topologies.js';
import type { NodeAddress } from '../support/topologies.js';

const unsupported = await topologySupport();
if (unsupported) console.warn(`Redis Sentinel tests skipped: ${unsupported}`);
const maybe = unsupported ? it.skip : it;
const skipped = unsupported ? ` (skipped: ${unsupported})` : '';

/** Generous bounds: the failover itself takes about 1 s (down-after-milliseconds) plus an election. */
const LEASE_MS = 6_000;
const COMMAND_MS = 1_000;
const WAIT_MS = 10_000;
const SLACK_MS = 1_500;

/** Whether `key`'s lock state exists on `master`. */
async function stateOn(master: NodeAddress, prefix: string, key: string): Promise<boolean> {
  const client = new Redis({ host: master.host, port: master.port, maxRetriesPerRequest: 1 });
  try {
    return (await client.exists(redisNames(prefix, key).state)) === 1;
  } finally {
    client.disconnect();
  }
}

/**
 * `call`, retried every 100 ms while it fails with a LockError (an engine whose connections have not found the new
 * master yet), for up to 15 s; `seen` gets each such error.
 */
async function retryLockErrors<T>(call: () => Promise<T>, seen: (err: unknown) => void = () => undefined): Promise<T> {
  const deadline = performance.now() + 15_000;
  for (;;) {
    try {
      return await call();
    } catch (err) {
      seen(err);
      if (!(err instanceof LockError) || performance.now() > deadline) throw err;
      await sleep(100);
    }
  }
}

/** Every key under `prefix` on the master the sentinels report now. */
async function keysOnMaster(s: RedisSentinelSet, prefix: string): Promise<string[]> {
  const master = await s.master();
  const client = new Redis({ host: master.host, port: master.port, maxRetriesPerRequest: 1 });
  try {
    return await keysUnder(client, prefix);
  } finally {
    client.disconnect();
  }
}

describe('through Redis Sentinel, across a failover (master SIGKILLed)', () => {
  const kit = new LockTestKit();
  let set: RedisSentinelSet | undefined;

  beforeAll(async () => {
    if (!unsupported) set = await RedisSentinelSet.start();
  }, 30_000);
  afterEach(() => kit.closeAll());
  afterAll(() => set?.dispose());

  maybe(
    `locks work before and after; the waiter and the holder end cleanly; only LockErrors reach the caller${skipped}`,
    async () => {
      const s = set!;
      const prefix = uniquePrefix('sentinel');
      kit.watchKeys(prefix, (p) => keysOnMaster(s, p));
      const errors: unknown[] = [];
      const raw: unknown[] = [];
      const onUnhandled = (reason: unknown) => raw.push(reason);
      process.on('unhandledRejection', onUnhandled);
      kit.add(async () => {
        process.off('unhandledRejection', onUnhandled);
      });
      const engines: LockEngine[] = [];
      const engine = (): LockEngine => {
        const e = kit.engine({
          redis: s.redisOptions(),
          keyPrefix: prefix,
          leaseMs: LEASE_MS,
          commandTimeoutMs: COMMAND_MS,
        });
        e.on('lost', (event) => errors.push(event.error));
        engines.push(e);
        return e;
      };
      const a = engine();
      const b = engine();
      const c = engine();

      // Before: exclusion through the sentinels' master.
      const oldMaster = await s.master();
      const first = await a.acquire('before');
      expect(await stateOn(oldMaster, prefix, 'before')).toBe(true);
      expect(await b.tryAcquire('before')).toBeNull();
      await first.release();

      // A holder and a waiter.
      const holder = await a.acquire('held');
      const waitStart = performance.now();
      const waiter = track(b.acquire('held', { waitTimeoutMs: WAIT_MS }));
      await until(async () => (await c.inspect('held'))?.waitingWriters === 1, 5_000, 'the waiter to wait');

      await s.killMaster();
      const newMaster = await s.waitForFailover(20_000);
      expect(newMaster.port).not.toBe(oldMaster.port);

      // After: new acquisitions work on the new master, from every engine once its connection has found it again
      // (each reconnects on its own schedule; attempts meanwhile may fail, as LockErrors).
      const eventually = <T>(call: () => Promise<T>) => retryLockErrors(call, (err) => errors.push(err));
      const after = await eventually(() => c.acquire('after', { waitTimeoutMs: 1_000 }));
      expect(await stateOn(newMaster, prefix, 'after')).toBe(true);
      expect(await eventually(() => a.tryAcquire('after'))).toBeNull();
      await after.release();
      const fresh = engine();
      const late = await eventually(() => fresh.acquire('after', { waitTimeoutMs: 1_000 }));
      expect(await stateOn(newMaster, prefix, 'after')).toBe(true);
      await late.release();

      // The holder: still held on the new master, or reported lost through its signal. Never both holder and waiter.
      if (holder.isHeld) {
        const info = await c.inspect('held');
        expect(info?.holders.map((h) => h.fencingToken)).toContain(holder.fencingToken);
        expect(await stateOn(newMaster, prefix, 'held')).toBe(true);
        expect(
          waiter.settled &&
            (await waiter.promise.then(
              (h) => h.isHeld,
              () => false,
            )),
        ).toBe(false);
        expect(await holder.release()).toBe(true);
      } else {
        expect(holder.signal.aborted).toBe(true);
        expect(holder.signal.reason).toBeInstanceOf(LockLostError);
        errors.push(holder.signal.reason);
      }

      // The waiter: the lock, or a LockError, within its bound.
      const outcome = await waiter.promise.then(
        (h) => h,
        (err: unknown) => {
          errors.push(err);
          return undefined;
        },
      );
      expect(waiter.at! - waitStart).toBeLessThan(WAIT_MS + COMMAND_MS + SLACK_MS);
      if (outcome) {
        expect(outcome.isHeld).toBe(true);
        expect(holder.isHeld).toBe(false);
        await outcome.release();
      }

      // Every engine's connections (commands and wake-ups) found the new master.
      await until(
        async () => (await Promise.all(engines.map((e) => e.ping(500)))).every((p) => p.command && p.subscriber),
        15_000,
        'every engine to reach the new master',
      );

      for (const err of errors) expect(err).toBeInstanceOf(LockError);
      expect(raw).toEqual([]);
    },
    30_000,
  );
});

describe('semaphores through Redis Sentinel, across a failover (master SIGKILLed)', () => {
  const kit = new LockTestKit();
  let set: RedisSentinelSet | undefined;

  beforeAll(async () => {
    if (!unsupported) set = await RedisSentinelSet.start();
  }, 30_000);
  afterEach(() => kit.closeAll());
  afterAll(() => set?.dispose());

  maybe(
    `held permits and a waiter come through; the replicated limit applies on the new master; never more holders than the limit${skipped}`,
    async () => {
      const s = set!;
      const prefix = uniquePrefix('sentinel-permits');
      const LIMIT = 2;
      // The holders' lease is long enough that the waiter's own retry (when the blocking leases can have run out, over
      // 13 s after its attempt) cannot be what gives it its permit: only a wake-up on the new master can, within
      // WAKE_MS.
      const HOLDER_LEASE_MS = 20_000;
      const WAKE_MS = COMMAND_MS + SLACK_MS;
      const errors: unknown[] = [];
      const raw: unknown[] = [];
      const onUnhandled = (reason: unknown) => raw.push(reason);
      process.on('unhandledRejection', onUnhandled);
      kit.add(async () => {
        process.off('unhandledRejection', onUnhandled);
      });
      const options = { redis: s.redisOptions(), keyPrefix: prefix, leaseMs: LEASE_MS, commandTimeoutMs: COMMAND_MS };
      const engines: LockEngine[] = [];
      const engine = (): LockEngine => {
        const e = kit.engine(options);
        e.on('lost', (event) => errors.push(event.error));
        engines.push(e);
        return e;
      };
      const [a, b, c, d] = [engine(), engine(), engine(), engine()];
      // Sets the limit as a deploy step would, acknowledged by the replica (and so is everything written before it).
      const admin = kit.engine({ ...options, waitForReplicas: { replicas: 1, timeoutMs: 500 } });

      // Every permit of "jobs" handed out, sampled every 5 ms: never more than LIMIT held at once in this process.
      const handles: PermitHandle[] = [];
      const granted = (permit: PermitHandle): PermitHandle => (handles.push(permit), permit);
      let mostHeld = 0;
      const sampler = setInterval(() => (mostHeld = Math.max(mostHeld, handles.filter((h) => h.isHeld).length)), 5);
      kit.add(async () => clearInterval(sampler));

      // Before: two holders, one waiter, the limit confirmed by the replica.
      const oldMaster = await s.master();
      const permitA = granted(await a.acquirePermit('jobs', { limit: LIMIT, leaseMs: HOLDER_LEASE_MS }));
      const permitB = granted(await b.acquirePermit('jobs', { limit: LIMIT, leaseMs: HOLDER_LEASE_MS }));
      const waitStart = performance.now();
      const waiter = track(c.acquirePermit('jobs', { limit: LIMIT, waitTimeoutMs: 30_000 }).then(granted));
      await until(async () => (await d.inspectPermits('jobs'))?.waiting === 1, 5_000, 'the waiter to wait');
      expect(await admin.setPermitLimit('jobs', LIMIT)).toBe(LIMIT);
      expect(await d.tryAcquirePermit('jobs', { limit: 5 })).toBeNull();

      await s.killMaster();
      const newMaster = await s.waitForFailover(20_000);
      expect(newMaster.port).not.toBe(oldMaster.port);
      await until(
        async () => (await Promise.all(engines.map((e) => e.ping(500)))).every((p) => p.command && p.subscriber),
        15_000,
        'every engine to reach the new master',
      );
      const eventually = <T>(call: () => Promise<T>) => retryLockErrors(call, (err) => errors.push(err));

      // The new master has both permits and the stored limit: a caller naming 5 still gets nothing.
      await until(
        async () => (await eventually(() => d.inspectPermits('jobs')))?.used === LIMIT,
        5_000,
        'the permits on the new master',
      );
      const onNew = await eventually(() => d.inspectPermits('jobs'));
      expect(onNew).toMatchObject({ limit: LIMIT, used: LIMIT });
      expect(onNew?.holders.map((h) => h.fencingToken).sort((x, y) => x - y)).toEqual(
        [permitA.fencingToken, permitB.fencingToken].sort((x, y) => x - y),
      );
      expect(await stateOn(newMaster, prefix, 'jobs')).toBe(true);
      expect(await eventually(() => d.tryAcquirePermit('jobs', { limit: 5 }))).toBeNull();
      expect(permitA.isHeld && permitB.isHeld).toBe(true);

      // The waiter waits on across the failover: its registration lapses while its heartbeat cannot reach Redis and
      // comes back once it can, and the re-check made when the wake-up connection is back waits for the command
      // connection (it reconnects on its own schedule; a re-check sent before it failed the waiter with a
      // LockUnavailableError in 4 of 20 runs). A release on the new master wakes it, and it gets the permit.
      await until(
        async () => waiter.settled || (await eventually(() => d.inspectPermits('jobs')))?.waiting === 1,
        5_000,
        'the waiter to wait again',
      );
      if (waiter.settled)
        throw new Error(`the waiter gave up across the failover: ${String(await rejectionOf(waiter.promise))}`);
      const releasedAt = performance.now();
      expect(await permitA.release()).toBe(true);
      const permitC = await waiter.promise;
      expect(waiter.at! - releasedAt).toBeLessThan(WAKE_MS);
      expect(permitC).toMatchObject({ key: 'jobs', limit: LIMIT, isHeld: true });
      expect(permitC.fencingToken).toBeGreaterThan(Math.max(permitA.fencingToken, permitB.fencingToken));
      expect(await d.tryAcquirePermit('jobs', { limit: 5 })).toBeNull();
      expect(waiter.at! - waitStart).toBeLessThan(30_000 + COMMAND_MS + SLACK_MS);

      // New permits work on the new master, from an engine that never knew the old one; the stored limit applies.
      await permitB.release();
      const fresh = engine();
      const permitD = granted(await eventually(() => fresh.acquirePermit('jobs', { limit: 5, waitTimeoutMs: 1_000 })));
      expect(permitD.limit).toBe(LIMIT);
      expect(await fresh.tryAcquirePermit('jobs', { limit: 5 })).toBeNull();
      const other = await eventually(() => fresh.acquirePermit('after', { limit: 1, waitTimeoutMs: 1_000 }));
      expect(await stateOn(newMaster, prefix, 'after')).toBe(true);
      expect(await a.tryAcquirePermit('after', { limit: 1 })).toBeNull();
      expect(await other.release()).toBe(true);
      expect(await permitC.release()).toBe(true);
      expect(await permitD.release()).toBe(true);
      expect(await stateOn(newMaster, prefix, 'after')).toBe(false);
      // Nothing held or waiting; the limit set with setPermitLimit is kept (for a day, as documented).
      expect(await d.inspectPermits('jobs')).toMatchObject({ limit: LIMIT, used: 0, waiting: 0, holders: [] });

      expect(mostHeld).toBe(LIMIT);
      for (const err of errors) expect(err).toBeInstanceOf(LockError);
      expect(raw).toEqual([]);
    },
    60_000,
  );
});

describe('through Redis Sentinel with waitForReplicas, across a failover to a replica that lagged', () => {
  const kit = new LockTestKit();
  let set: RedisSentinelSet | undefined;

  beforeAll(async () => {
    if (!unsupported) set = await RedisSentinelSet.start();
  }, 30_000);
  afterEach(() => kit.closeAll());
  afterAll(() => set?.dispose());

  maybe(
    `a grant the replica did not confirm is refused, so no two clients ever hold the lock; a confirmed one survives${skipped}`,
    async () => {
      const s = set!;
      const prefix = uniquePrefix('sentinel-wait');
      const options = { redis: s.redisOptions(), keyPrefix: prefix, leaseMs: LEASE_MS, commandTimeoutMs: COMMAND_MS };
      // A long lease: once the only replica is promoted, no renewal of A can be confirmed until a new replica
      // attaches (the price of `replicas: 1`), so A's hold lives on its lease alone meanwhile.
      // After the failover the new master has no replica, so every renewal of A's holds waits out its WAIT (500 ms)
      // on A's one command connection, and A's release queues behind them (with the in-doubt recheck renewing at
      // once, more than 1 s at times): A's calls get 3 s. The library does not keep WAIT off that connection yet.
      const a = kit.engine({
        ...options,
        leaseMs: 20_000,
        commandTimeoutMs: 3_000,
        waitForReplicas: { replicas: 1, timeoutMs: 500 },
      });
      const b = kit.engine(options);

      // Confirmed by the replica before it was granted.
      const safe = await a.acquire('safe');

      // The replica stops applying the master's stream; A's next grant is not confirmed, so it is refused and undone.
      const replica = await replicaOf(s);
      kit.add(async () => replica.disconnect());
      await replica.call('CLIENT', 'PAUSE', '1500', 'WRITE');
      const refused = await a.acquire('split', { waitTimeoutMs: 0 }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(LockUnavailableError);
      expect(refused).toMatchObject({ reason: 'not-replicated', key: 'split' });

      // The master dies at once; Sentinel promotes the replica.
      const oldMaster = await s.killMaster();
      const newMaster = await s.waitForFailover(20_000);
      expect(newMaster.port).not.toBe(oldMaster.port);

      const eventually = <T>(call: () => Promise<T>) => retryLockErrors(call);
      // B gets "split": A never held it. B does not get "safe": the new master has A's confirmed hold.
      const bSplit = await eventually(() => b.acquire('split', { waitTimeoutMs: 0 }));
      expect(await eventually(() => b.tryAcquire('safe'))).toBeNull();
      expect(safe.isHeld).toBe(true);
      expect(await stateOnMaster(s, prefix, 'safe')).toBe(true);
      await bSplit.release();
      await until(async () => (await a.ping(500)).command, 15_000, 'A to reach the new master');
      expect(await safe.release()).toBe(true);
      expect(await stateOnMaster(s, prefix, 'safe')).toBe(false);
    },
    40_000,
  );

  /** A client on the set's replica (the node that is not the master). */
  async function replicaOf(s: RedisSentinelSet): Promise<Redis> {
    const master = await s.master();
    const sentinel = new Redis({ host: s.sentinels[0].host, port: s.sentinels[0].port, maxRetriesPerRequest: 1 });
    try {
      const replicas = (await sentinel.call('SENTINEL', 'REPLICAS', s.name)) as string[][];
      const fieldsOf = (flat: string[]) =>
        Object.fromEntries(flat.flatMap((v, i) => (i % 2 === 0 ? [[v, flat[i + 1]]] : [])));
      const found = replicas.map(fieldsOf).find((r) => Number(r.port) !== master.port);
      if (!found) throw new Error('no replica reported by the sentinel');
      return new Redis({ host: found.ip, port: Number(found.port), maxRetriesPerRequest: 1 });
    } finally {
      sentinel.disconnect();
    }
  }

  async function stateOnMaster(s: RedisSentinelSet, prefix: string, key: string): Promise<boolean> {
    return stateOn(await s.master(), prefix, key);
  }
});
