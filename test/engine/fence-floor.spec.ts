import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import { keysUnder } from '../support/redis.js';
import { findRedisServer } from '../../tools/redis-server.mjs';
import { LockTestKit, redisNames, sleep } from '../support/lock-test-kit.js';

/** Redis time in µs, as the scripts read it. */
async function redisMicros(redis: Redis): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1_000_000 + Number(us);
}

const ONE_HOUR_US = 3_600_000_000;

/**
 * A fencing token is the server's time in µs, or one past the larger of the key's last token and its hash slot's floor
 * (`<prefix>fence:{<tag>}`). These tests put the floor an hour ahead of the server's clock, which is where it stands
 * after the clock stepped back an hour (or a failover landed on a server whose clock is an hour behind): the next
 * token must still be greater, however long the key was free.
 */
describe('fencing tokens never go back, whatever the server clock did, at bounded memory', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it("a freed key's token is kept by its slot's floor, which never expires and only rises", async () => {
    const engine = kit.engine();
    const redis = kit.redis();
    const names = redisNames(engine.settings.keyPrefix, 'k');
    expect(names.fence).toMatch(new RegExp(`^${engine.settings.keyPrefix}fence:\\{[0-9a-z]+\\}$`));
    const first = await engine.acquire('k', { leaseMs: 10_000 });
    await first.release();
    expect(await redis.exists(names.state)).toBe(0);
    expect(await redis.get(names.fence)).toBe(String(first.fencingToken));
    expect(await redis.pttl(names.fence)).toBe(-1);
    const permit = await engine.acquirePermit('s', { limit: 1 });
    await permit.release();
    expect(Number(await redis.get(redisNames(engine.settings.keyPrefix, 's').fence))).toBe(permit.fencingToken);
  });

  it('memory does not grow with the number of distinct keys: one floor per hash slot used, nothing per key', async () => {
    const engine = kit.engine();
    const redis = kit.redis();
    const prefix = engine.settings.keyPrefix;
    const keys = Array.from({ length: 3_000 }, (_, i) => `order:${i}`);
    for (let i = 0; i < keys.length; i += 100) {
      await Promise.all(keys.slice(i, i + 100).map(async (key) => (await engine.acquire(key)).release()));
    }
    await Promise.all(
      keys.slice(0, 100).map(async (key) => (await engine.acquirePermit(key + ':s', { limit: 2 })).release()),
    );
    const left = await keysUnder(redis, prefix, true);
    const floors = new Set(
      [...keys, ...keys.slice(0, 100).map((k) => k + ':s')].map((k) => redisNames(prefix, k).fence),
    );
    expect(left.every((name) => /^.*fence:\{[0-9a-z]+\}$/.test(name))).toBe(true);
    expect(new Set(left)).toEqual(floors);
    // 3,100 keys in at most 16,384 slots: fewer floors than keys (about 2,800 here), each a short string.
    expect(left.length).toBeLessThan(keys.length);
    expect(await keysUnder(redis, prefix)).toEqual([]);
  });

  it.each([
    ['a write lock', 'write' as const],
    ['a read lock', 'read' as const],
  ])('%s taken on a free key after the clock stepped back gets a greater token', async (_, mode) => {
    const engine = kit.engine();
    const redis = kit.redis();
    const names = redisNames(engine.settings.keyPrefix, 'k');
    const first = await engine.acquire('k', { mode });
    await first.release();
    const ahead = (await redisMicros(redis)) + ONE_HOUR_US;
    await redis.set(names.fence, String(ahead));
    const next = await engine.acquire('k', { mode });
    expect(next.fencingToken).toBeGreaterThan(ahead);
    await next.release();
  });

  it('a waiter granted on the full path, and a lock whose holder died (its lease ran out), get a greater token', async () => {
    const engine = kit.engine();
    const other = kit.peer(engine);
    const redis = kit.redis();
    const names = redisNames(engine.settings.keyPrefix, 'k');
    // The holder stops renewing (as a dead process): its lease runs out, the state expires by itself.
    const dead = await engine.acquire('k', { leaseMs: 300, autoExtend: false });
    await sleep(400);
    expect(await redis.exists(names.state)).toBe(0);
    expect(await redis.get(names.fence)).toBe(String(dead.fencingToken));
    let ahead = (await redisMicros(redis)) + ONE_HOUR_US;
    await redis.set(names.fence, String(ahead));
    const after = await other.acquire('k');
    expect(after.fencingToken).toBeGreaterThan(ahead);
    // A waiter queued behind a holder is granted by the full pass.
    const waiting = other.acquire('k', { mode: 'read', waitTimeoutMs: 5_000, fair: true });
    await sleep(50);
    // The state and the tombstone both hold the last token (each grant writes both).
    ahead = after.fencingToken + ONE_HOUR_US;
    await redis.hset(names.state, 'f', String(ahead));
    await redis.set(names.fence, String(ahead));
    await after.release();
    expect((await waiting).fencingToken).toBeGreaterThan(ahead);
  });

  it('a permit taken on a free semaphore after the clock stepped back gets a greater token', async () => {
    const engine = kit.engine();
    const redis = kit.redis();
    const names = redisNames(engine.settings.keyPrefix, 's');
    const first = await engine.acquirePermit('s', { limit: 2 });
    await first.release();
    expect(await redis.get(names.fence)).toBe(String(first.fencingToken));
    const ahead = (await redisMicros(redis)) + ONE_HOUR_US;
    await redis.set(names.fence, String(ahead));
    const next = await engine.acquirePermit('s', { limit: 2 });
    expect(next.fencingToken).toBeGreaterThan(ahead);
    await next.release();
  });

  // The real thing: a server whose clock steps back 30 minutes between two holds. libfaketime shifts the server's
  // clock (re-reading its offset from a file at every call); it wraps only a server built without jemalloc's
  // clock calls at start-up (not Debian's package: point REDIS_SERVER_BIN at such a build to run it).
  it('a server whose clock steps back 30 minutes between two holds of a key still gives a greater token', async () => {
    const lib = ['/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1', '/usr/lib/faketime/libfaketime.so.1'].find(
      (p) => existsSync(p),
    );
    if (!lib) return console.warn('skipped: libfaketime is not installed (apt-get install -y faketime)');
    const bin = findRedisServer();
    const probe = spawnSync(bin ?? 'redis-server', ['--version'], {
      env: { ...process.env, LD_PRELOAD: lib, FAKETIME: '+0' },
      timeout: 3_000,
    });
    if (probe.status !== 0) {
      return console.warn(`skipped: ${bin} does not run under libfaketime (set REDIS_SERVER_BIN to a build that does)`);
    }
    const offsetFile = join(mkdtempSync(join(tmpdir(), 'fence-clock-')), 'offset');
    writeFileSync(offsetFile, '+0\n');
    // The monotonic clock stays true: Redis's event loop runs on it (a step back there would stall its timers).
    const server = await kit.server([], {
      LD_PRELOAD: lib,
      FAKETIME_TIMESTAMP_FILE: offsetFile,
      FAKETIME_NO_CACHE: '1',
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    });
    const engine = kit.engine({ redis: server.url });
    const redis = kit.redis(server.url);
    const first = await engine.acquire('k');
    await first.release();
    const before = await redisMicros(redis);
    // Replaced whole (a rename), never seen half-written: the server reads it at every clock call.
    writeFileSync(`${offsetFile}.next`, '-30m\n');
    renameSync(`${offsetFile}.next`, offsetFile);
    const stepped = await redisMicros(redis);
    expect(stepped).toBeLessThan(before - 29 * 60 * 1_000_000); // the clock did step back
    expect(stepped).toBeLessThan(first.fencingToken);
    const next = await engine.acquire('k');
    expect(next.fencingToken).toBeGreaterThan(first.fencingToken);
    await next.release();
  });
});
