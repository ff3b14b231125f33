import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { LockLostError } from '../../lib/errors/lock-lost.error.js';
import { LockUnavailableError } from '../../lib/errors/lock-unavailable.error.js';
import type { LockEngineOptions } from '../../lib/locking/engine/engine-options.js';
import { RedisProcess, sleep } from '../support/faults.js';
import { LockTestKit, keysUnder, until } from '../support/lock-test-kit.js';
import { replicasCaughtUp } from '../support/redis-nodes.js';

/**
 * `waitForReplicas` against a real master with a real replica. A replica is held back with `CLIENT PAUSE <ms> WRITE`
 * on it: it stops applying the replication stream, so the master's writes are not acknowledged meanwhile (what a
 * slow or partitioned replica does).
 */
const WAIT_MS = 300;
const COMMAND_MS = 1_000;

describe('waitForReplicas (a master and one replica)', () => {
  const kit = new LockTestKit();
  let master: RedisProcess;
  let replica: RedisProcess;
  let admin: Redis;
  let replicaAdmin: Redis;

  beforeAll(async () => {
    master = await RedisProcess.start();
    replica = await RedisProcess.start(undefined, ['--replicaof', '127.0.0.1', String(master.port)]);
    admin = new Redis(master.url, { maxRetriesPerRequest: 1 });
    replicaAdmin = new Redis(replica.url, { maxRetriesPerRequest: 1 });
    await until(
      async () => /master_link_status:up/.test(await replicaAdmin.info('replication')),
      10_000,
      'the replica to sync',
    );
  }, 20_000);
  afterEach(() => kit.closeAll());
  afterAll(async () => {
    admin.disconnect();
    replicaAdmin.disconnect();
    await replica.dispose();
    await master.dispose();
  });

  const engine = (options: Partial<LockEngineOptions> = {}) =>
    kit.engine({
      redis: master.url,
      commandTimeoutMs: COMMAND_MS,
      waitForReplicas: { replicas: 1, timeoutMs: WAIT_MS },
      ...options,
    });

  /** Holds the replica's replication stream back for `ms`. */
  const holdBack = (ms: number) => replicaAdmin.call('CLIENT', 'PAUSE', String(ms), 'WRITE');

  /** Resolves once the replica has applied everything the master has written. */
  async function caughtUp(): Promise<void> {
    await replicasCaughtUp(async () => admin.info('replication'));
  }

  it('grants once the replica has the lock: it is on the replica when acquire returns', async () => {
    const a = engine();
    const handle = await a.acquire('order:1');
    // Read on the replica at once: WAIT already confirmed the write, nothing is in flight.
    expect(await keysUnder(replicaAdmin, a.settings.keyPrefix)).not.toEqual([]);
    expect(await kit.peer(a, { redis: master.url }).tryAcquire('order:1')).toBeNull(); // and a lock like any other
    await handle.release();
    await caughtUp();
  });

  it('refuses a grant the replica did not confirm: LockUnavailableError not-replicated, undone on the master', async () => {
    const a = engine();
    const b = kit.peer(a, { redis: master.url });
    await holdBack(1_500);
    const start = performance.now();
    const err = await a.acquire('order:2').catch((e: unknown) => e);
    const took = performance.now() - start;
    expect(err).toBeInstanceOf(LockUnavailableError);
    expect(err).toMatchObject({ reason: 'not-replicated', operation: 'acquire', key: 'order:2' });
    expect((err as Error).message).toMatch(
      /0 of 1 replica\(s\) acknowledged within waitForReplicas\.timeoutMs \(300 ms\); the grant was undone/,
    );
    expect(took).toBeGreaterThanOrEqual(WAIT_MS - 20);
    expect(took).toBeLessThan(COMMAND_MS + 200);
    // Undone on the master: another instance gets the lock (not waiting for a lease to run out).
    await until(
      async () => (await keysUnder(admin, a.settings.keyPrefix)).length === 0,
      2_000,
      'the refused grant to be undone',
    );
    await sleep(1_600); // the replica resumes
    const other = await b.acquire('order:2', { waitTimeoutMs: 0 });
    await other.release();
    await caughtUp();
    expect(await keysUnder(replicaAdmin, a.settings.keyPrefix)).toEqual([]);
  });

  it('grants a permit once the replica has it, and refuses one the replica did not confirm (undone on the master)', async () => {
    const a = engine();
    const permit = await a.acquirePermit('export:1', { limit: 1 });
    expect(await keysUnder(replicaAdmin, a.settings.keyPrefix)).not.toEqual([]);
    await permit.release();
    await caughtUp();
    await holdBack(1_500);
    const err = await a.acquirePermit('export:2', { limit: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockUnavailableError);
    expect(err).toMatchObject({ reason: 'not-replicated', key: 'export:2' });
    await until(
      async () => (await keysUnder(admin, a.settings.keyPrefix)).length === 0,
      2_000,
      'the refused permit to be undone',
    );
    await sleep(1_600);
    await caughtUp();
  });

  it('refuses a re-entry the replica did not confirm, and keeps the outer hold', async () => {
    const a = engine();
    let outerHandle: { readonly isHeld: boolean } | undefined;
    const err = await a.withLock('order:3', async (outer) => {
      outerHandle = outer;
      await holdBack(1_000);
      const inner = await a.withLock('order:3', async () => 'ran').catch((e: unknown) => e);
      await sleep(1_100);
      await caughtUp();
      const info = await a.inspect('order:3');
      expect(info?.holders).toHaveLength(1);
      expect(info?.holders[0].holdCount).toBe(1);
      expect(outer.isHeld).toBe(true);
      return inner;
    });
    expect(err).toBeInstanceOf(LockUnavailableError);
    expect(err).toMatchObject({ reason: 'not-replicated' });
    expect(outerHandle?.isHeld).toBe(false);
    expect(await a.inspect('order:3')).toBeNull();
  });

  it('counts a renewal only once the replica has it: the holder learns its lease ran out while the replica lagged', async () => {
    const a = engine({ leaseMs: 600, commandTimeoutMs: 400, waitForReplicas: { replicas: 1, timeoutMs: 150 } });
    const handle = await a.acquire('order:4');
    await holdBack(1_500);
    await until(async () => handle.signal.aborted, 3_000, 'the holder to be told');
    expect(handle.signal.reason).toBeInstanceOf(LockLostError);
    expect(handle.isHeld).toBe(false);
    await sleep(1_000);
    await caughtUp();
    // Its release frees whatever the master still had.
    await handle.release();
    await until(async () => (await keysUnder(admin, a.settings.keyPrefix)).length === 0, 3_000, 'nothing left');
  });

  it('does not trust a shortening extend the replica did not confirm: the holder stops holding when it may have run out', async () => {
    const a = engine({ leaseMs: 20_000 });
    const b = kit.peer(a, { redis: master.url });
    const handle = await a.acquire('order:8');
    await holdBack(1_500);
    // The master applies the shorter lease; only the acknowledgement is missing.
    await expect(handle.extend(200)).rejects.toMatchObject({ reason: 'not-replicated', operation: 'extend' });
    await sleep(400);
    const other = await b.tryAcquire('order:8');
    expect(other).not.toBeNull(); // the master let the 200 ms lease run out...
    expect(handle.isHeld).toBe(false); // ...and the first holder knows it no longer holds the lock
    expect(handle.signal.aborted).toBe(true);
    await other?.release();
    await handle.release();
    await sleep(1_200);
    await caughtUp();
  });

  it('does not make a release wait for the replica', async () => {
    const a = engine();
    const handle = await a.acquire('order:5');
    await holdBack(1_000);
    const start = performance.now();
    expect(await handle.release()).toBe(true);
    expect(performance.now() - start).toBeLessThan(WAIT_MS);
    await sleep(1_100);
    await caughtUp();
  });

  it('names WAIT when the ACL user may not run it, and leaves nothing behind', async () => {
    await admin.call('ACL', 'SETUSER', 'nowait', 'on', '>pw', '~*', '&*', '+@all', '-wait');
    const a = engine({ redis: `redis://nowait:pw@127.0.0.1:${master.port}` });
    const err = await a.acquire('order:7').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockUnavailableError);
    expect(err).toMatchObject({ reason: 'permission-denied', missing: 'WAIT', key: 'order:7' });
    await until(
      async () => (await keysUnder(admin, a.settings.keyPrefix)).length === 0,
      2_000,
      'the grant to be undone',
    );
  });

  it("'connected' waits for the replicas the master has: refused while the one replica lags, granted otherwise", async () => {
    const a = engine({ waitForReplicas: { replicas: 'connected', timeoutMs: WAIT_MS } });
    const first = await a.acquire('order:6');
    expect(await keysUnder(replicaAdmin, a.settings.keyPrefix)).not.toEqual([]);
    await first.release();
    await holdBack(800);
    await expect(a.acquire('order:6')).rejects.toMatchObject({ reason: 'not-replicated' });
    await sleep(900);
    await caughtUp();
    await (await a.acquire('order:6')).release();
  });
});

describe('waitForReplicas on a server that refuses WAIT', () => {
  const kit = new LockTestKit();
  let server: RedisProcess;

  beforeAll(async () => {
    // What a proxy in front of Redis does: the command does not exist there.
    server = await RedisProcess.start(undefined, ['--rename-command', 'WAIT', '']);
  });
  afterEach(() => kit.closeAll());
  afterAll(() => server.dispose());

  it('reports it at start-up and refuses grants, leaving nothing behind', async () => {
    const a = kit.engine({ redis: server.url, waitForReplicas: { replicas: 1 } });
    await until(async () => kit.logger.lines.some((w) => /refused WAIT/.test(w)), 3_000, 'the start-up report');
    expect(kit.logger.lines.find((w) => /refused WAIT/.test(w))).toMatch(/turn waitForReplicas off/);
    const err = await a.acquire('x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockUnavailableError);
    expect(err).toMatchObject({ reason: 'not-replicated' });
    expect((err as Error).message).toMatch(/the server refused WAIT/);
    const admin = kit.redis(server.url);
    await until(
      async () => (await keysUnder(admin, a.settings.keyPrefix)).length === 0,
      2_000,
      'the grant to be undone',
    );
  });
});

/** Whether the server has `WAITAOF` (Redis 7.2+, Valkey 7.2+): `COMMAND INFO` answers nil for a command it lacks. */
async function hasWaitAof(client: Redis): Promise<boolean> {
  const [info] = (await client.call('COMMAND', 'INFO', 'waitaof')) as unknown[];
  return Array.isArray(info);
}

describe('waitForReplicas with aof: WAITAOF (a master and one replica)', () => {
  const kit = new LockTestKit();
  let master: RedisProcess;
  let replica: RedisProcess;
  let admin: Redis;
  let replicaAdmin: Redis;
  let waitAof: boolean;

  beforeAll(async () => {
    master = await RedisProcess.start();
    // The replica starts without an append-only file: WAIT counts it, WAITAOF does not until it has one.
    replica = await RedisProcess.start(undefined, ['--replicaof', '127.0.0.1', String(master.port)]);
    admin = new Redis(master.url, { maxRetriesPerRequest: 1 });
    replicaAdmin = new Redis(replica.url, { maxRetriesPerRequest: 1 });
    waitAof = await hasWaitAof(admin);
    await until(
      async () => /master_link_status:up/.test(await replicaAdmin.info('replication')),
      10_000,
      'the replica to sync',
    );
  }, 20_000);
  afterEach(() => kit.closeAll());
  afterAll(async () => {
    admin.disconnect();
    replicaAdmin.disconnect();
    await replica.dispose();
    await master.dispose();
  });

  it("counts a grant only once it is in the replica's append-only file (WAIT would count it at once)", async () => {
    if (!waitAof) return console.warn('skipped: this server has no WAITAOF (Redis 7.2+ / Valkey 7.2+)');
    await replicaAdmin.config('SET', 'appendonly', 'no');
    const options = { redis: master.url, commandTimeoutMs: COMMAND_MS };
    // In memory on the replica: WAIT is satisfied.
    const plain = kit.engine({ ...options, waitForReplicas: { replicas: 1, timeoutMs: WAIT_MS } });
    await (await plain.acquire('aof:1')).release();
    // Not in any append-only file on the replica: WAITAOF is not, and the grant is undone.
    const aof = kit.engine({ ...options, waitForReplicas: { replicas: 1, timeoutMs: WAIT_MS, aof: true } });
    const err = await aof.acquire('aof:2').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockUnavailableError);
    expect(err).toMatchObject({ reason: 'not-replicated', key: 'aof:2' });
    expect((err as Error).message).toMatch(/0 of 1 replica\(s\) acknowledged/);
    await until(async () => (await admin.exists(`${aof.settings.keyPrefix}{aof:2}`)) === 0, 2_000, 'the undo');
    // With an append-only file on the replica, the same grant counts. `appendfsync always`: the replica syncs each
    // write at once (with `everysec`, the default, it acknowledges up to a second later: more than timeoutMs here).
    await replicaAdmin.config('SET', 'appendfsync', 'always');
    await replicaAdmin.config('SET', 'appendonly', 'yes');
    await until(
      async () => {
        // The replica's file is in use once a fresh write on the master reaches it.
        await admin.set('aof:probe', String(Date.now()));
        return ((await admin.call('WAITAOF', 0, 1, 200)) as number[])[1] === 1;
      },
      10_000,
      "the replica's append-only file",
    );
    await admin.del('aof:probe');
    // A replica reports an fsync to its master at its next acknowledgement, not at once: on Redis 7.4 and Valkey 8 a
    // WAITAOF after a write measured 1 to 612 ms here (steps of about 200 ms), so a 300 ms wait grants by luck. The
    // grant that must count waits longer (docs/topologies.md says to give WAITAOF a second).
    const patient = kit.engine({
      ...options,
      commandTimeoutMs: 3_000,
      waitForReplicas: { replicas: 1, timeoutMs: 2_000, aof: true },
    });
    const handle = await patient.acquire('aof:2');
    expect(await replicaAdmin.exists(`${patient.settings.keyPrefix}{aof:2}`)).toBe(1);
    await handle.release();
  });

  it('names WAITAOF and the option to change on a server without it', async () => {
    if (waitAof) return console.warn('skipped: this server has WAITAOF (the refusal needs one before Redis 7.2)');
    const a = kit.engine({ redis: master.url, waitForReplicas: { replicas: 1, aof: true } });
    const err = await a.acquire('aof:3').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockUnavailableError);
    expect((err as Error).message).toMatch(/no WAITAOF .*set waitForReplicas\.aof to false/);
  });
});

describe("waitForReplicas 'connected' on a master that refuses ROLE (as Redis Enterprise and Azure do)", () => {
  const kit = new LockTestKit();
  let master: RedisProcess;
  let replica: RedisProcess;
  let replicaAdmin: Redis;

  beforeAll(async () => {
    master = await RedisProcess.start(undefined, ['--rename-command', 'ROLE', '']);
    replica = await RedisProcess.start(undefined, ['--replicaof', '127.0.0.1', String(master.port)]);
    replicaAdmin = new Redis(replica.url, { maxRetriesPerRequest: 1 });
    await until(
      async () => /master_link_status:up/.test(await replicaAdmin.info('replication')),
      10_000,
      'the replica to sync',
    );
  }, 20_000);
  afterEach(() => kit.closeAll());
  afterAll(async () => {
    replicaAdmin.disconnect();
    await replica.dispose();
    await master.dispose();
  });

  it('counts the connected replicas from INFO replication: refused while the one replica lags, granted otherwise', async () => {
    const a = kit.engine({
      redis: master.url,
      commandTimeoutMs: COMMAND_MS,
      waitForReplicas: { replicas: 'connected', timeoutMs: WAIT_MS },
    });
    const first = await a.acquire('order:7');
    expect(await keysUnder(replicaAdmin, a.settings.keyPrefix)).not.toEqual([]);
    await first.release();
    await replicaAdmin.call('CLIENT', 'PAUSE', '800', 'WRITE');
    await expect(a.acquire('order:7')).rejects.toMatchObject({ reason: 'not-replicated' });
    await sleep(900);
    await (await a.acquire('order:7', { waitTimeoutMs: 2_000 })).release();
    expect(kit.logger.lines.filter((l) => /refused/.test(l))).toEqual([]);
  });
});
