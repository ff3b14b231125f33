import { afterEach, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import { ACQUIRE } from '../../lib/redis/scripts/lock-scripts.js';
import { LockTestKit, keysUnder, leaseExpiry, redisNames, sleep, track, until } from '../support/lock-test-kit.js';

/** Redis server time in milliseconds. */
async function redisNowMs(redis: Redis): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/**
 * The single-holder form (see docs/internals.md): a lock with one holder is its state hash alone, the lease being the
 * key's own expiry; anything else that touches the lock turns it into the full form first. The semantic suites cover
 * behaviour; these tests pin the transitions between the two forms.
 */
describe('single-holder form', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it("a sole holder's lease that runs out while a script runs (a later item of a batch) frees the lock: no holder is left without a lease", async () => {
    // A private server: the script below keeps it busy until a's lease has run out.
    const url = (await kit.server()).url;
    const engine = kit.engine({ redis: url });
    const redis = kit.redis(url);
    const names = redisNames(engine.settings.keyPrefix, 'k');
    const keys = names.granting;
    const acquire = (args: string[]) => redis.eval(ACQUIRE.source, keys.length, ...keys, ...args);
    const [a, b] = ['a', 'b'].map((ch) => ch.repeat(32));
    expect(await acquire([a, 'r', '200', '1', 'host|1|app|a', '', ''])).toEqual([1, expect.any(Number), 0]);
    // Redis shows keys as of a script's start: a script that runs past a's lease (as the later items of a batch do)
    // still sees the state, while its own clock says the lease ran out.
    const late = `local function one(KEYS, ARGV)\n${ACQUIRE.source}\nend
local ends = redis.call('PEXPIRETIME', KEYS[1])
repeat local t = redis.call('TIME') until tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) > ends
return { ends, one(KEYS, ARGV) }`;
    const [ends, reply] = (await redis.eval(
      late,
      keys.length,
      ...keys,
      b,
      'r',
      '60000',
      '2',
      'host|1|app|b',
      '',
      '',
    )) as [number, unknown];
    expect(ends).toBeGreaterThan(0); // the script did see a's state, and ran past its lease
    expect(reply).toEqual([1, expect.any(Number), 0]);
    // a's record went with its lease; b holds alone, with a lease.
    expect(await redis.hexists(names.state, `h:${a}`)).toBe(0);
    expect((await engine.inspect('k'))?.holders).toHaveLength(1);
    // a is not held any more (a re-entry says so, rather than failing in the script), and may take the lock again.
    expect(await acquire([a, 're', '30000', '3', 'host|1|app|a', '', ''])).toEqual([0, 0, 4]);
    expect(await acquire([a, 'r', '30000', '4', 'host|1|app|a', '', ''])).toEqual([1, expect.any(Number), 0]);
    expect((await engine.inspect('k'))?.holders).toHaveLength(2);
    await redis.del(...keys);
  });

  it('an uncontended hold is one key, expiring with its lease, and leaves nothing once released', async () => {
    const engine = kit.engine();
    const redis = kit.redis();
    const names = redisNames(engine.settings.keyPrefix, 'k');
    const before = await redisNowMs(redis);
    const lock = await engine.acquire('k', { leaseMs: 5_000, autoExtend: false });
    const after = await redisNowMs(redis);
    expect(await keysUnder(redis, engine.settings.keyPrefix)).toEqual([names.state]);
    const expiry = await redis.pexpiretime(names.state);
    expect(expiry).toBeGreaterThanOrEqual(before + 5_000);
    expect(expiry).toBeLessThanOrEqual(after + 5_000);
    expect(await redis.hget(names.state, 'w')).toBe(lock.token);
    expect(Number(await redis.hget(names.state, 'f'))).toBe(lock.fencingToken);
    const info = await engine.inspect('k');
    expect(info?.holders).toHaveLength(1);
    expect(info?.holders[0].remainingLeaseMs).toBeGreaterThan(4_000);
    expect(info?.holders[0].remainingLeaseMs).toBeLessThanOrEqual(5_000);
    expect(await lock.release()).toBe(true);
    expect(await keysUnder(redis, engine.settings.keyPrefix)).toEqual([]);
  });

  it('a waiter turns it into the full form, keeping the holder’s lease, and is woken by the release', async () => {
    const engine = kit.engine();
    const other = kit.peer(engine);
    const redis = kit.redis();
    const names = redisNames(engine.settings.keyPrefix, 'k');
    const lock = await engine.acquire('k', { leaseMs: 10_000, autoExtend: false });
    const expiry = await redis.pexpiretime(names.state);
    const waiting = track(other.acquire('k', { waitTimeoutMs: 5_000 }));
    await until(async () => (await engine.inspect('k'))?.waitingWriters === 1, 2_000, 'the waiter to register');
    // Full form: the holder's lease moved into the leases set with the same expiry.
    expect(Number(await redis.zscore(names.leases, lock.token))).toBe(expiry);
    expect(await redis.pexpiretime(names.leases)).toBe(expiry);
    expect(waiting.settled).toBe(false);
    expect(await lock.release()).toBe(true);
    const second = await waiting.promise;
    expect(second.fencingToken).toBeGreaterThan(lock.fencingToken);
    expect(await second.release()).toBe(true);
    expect(await keysUnder(redis, engine.settings.keyPrefix)).toEqual([]);
  });

  it('renewal, extend and forceRelease work on the key’s own expiry', async () => {
    const engine = kit.engine();
    const redis = kit.redis();
    const names = redisNames(engine.settings.keyPrefix, 'k');
    // Renewed every 100 ms by the watchdog: held through several leases, still one key.
    const renewed = await engine.acquire('k', { leaseMs: 300, autoExtend: true });
    await sleep(900);
    expect(renewed.isHeld).toBe(true);
    expect(await keysUnder(redis, engine.settings.keyPrefix)).toEqual([names.state]);
    expect(await renewed.release()).toBe(true);

    const lock = await engine.acquire('k', { leaseMs: 10_000, autoExtend: false });
    await lock.extend(60_000);
    const now = await redisNowMs(redis);
    expect((await leaseExpiry(redis, names, lock.token))! - now).toBeGreaterThan(50_000);
    await lock.extend(2_000);
    expect((await leaseExpiry(redis, names, lock.token))! - now).toBeLessThanOrEqual(2_100);
    expect(await keysUnder(redis, engine.settings.keyPrefix)).toEqual([names.state]);
    expect(await engine.forceRelease('k')).toBe(true);
    expect(await engine.forceRelease('k')).toBe(false);
    expect(await keysUnder(redis, engine.settings.keyPrefix)).toEqual([]);
  });

  it('re-entry and a downgrade go through the full form and release exactly', async () => {
    const engine = kit.engine();
    const redis = kit.redis();
    await engine.runInOwnerScope(async () => {
      const outer = await engine.acquire('k', { leaseMs: 10_000 });
      const inner = await engine.acquire('k', { leaseMs: 10_000 });
      const read = await engine.acquire('k', { mode: 'read', leaseMs: 10_000 });
      const info = await engine.inspect('k');
      expect(info?.holders.map((h) => [h.mode, h.holdCount]).sort()).toEqual([
        ['read', 1],
        ['write', 2],
      ]);
      expect(await inner.release()).toBe(true);
      expect((await engine.inspect('k'))?.holders.find((h) => h.mode === 'write')?.holdCount).toBe(1);
      expect(await outer.release()).toBe(true);
      expect((await engine.inspect('k'))?.holders.map((h) => h.mode)).toEqual(['read']);
      expect(await read.release()).toBe(true);
    });
    expect(await engine.inspect('k')).toBeNull();
    expect(await keysUnder(redis, engine.settings.keyPrefix)).toEqual([]);
  });

  it('a holder whose key vanished (eviction, FLUSHDB) is not held, and the next hold gets a larger fencing token', async () => {
    const engine = kit.engine();
    const redis = kit.redis();
    const names = redisNames(engine.settings.keyPrefix, 'k');
    const lock = await engine.acquire('k', { leaseMs: 10_000, autoExtend: false });
    expect(await redis.del(names.state)).toBe(1);
    const again = await kit.peer(engine).tryAcquire('k', { autoExtend: false });
    expect(again?.fencingToken).toBeGreaterThan(lock.fencingToken);
    expect(await lock.release()).toBe(false);
    expect(await again?.release()).toBe(true);
    expect(await keysUnder(redis, engine.settings.keyPrefix)).toEqual([]);
  });
});
