import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import { FENCE_MEMORY_MS } from '../../lib/store/fence-memory.js';
import { findRedisServer } from '../../tools/redis-server.mjs';
import { LockTestKit, redisNames, sleep } from '../support/lock-test-kit.js';

/** Redis time in µs, as the scripts read it. */
async function redisMicros(redis: Redis): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1_000_000 + Number(us);
}

const ONE_HOUR_US = 3_600_000_000;

/**
 * A fencing token is the server's time in µs, or one past the key's last token. These tests put the key's last token
 * an hour ahead of the server's clock, which is where it stands after the clock stepped back an hour (or a failover
 * landed on a server whose clock is an hour behind): the next token must still be greater.
 */
describe('fencing tokens never go back with the server clock', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it('a freed key keeps its last token (a tombstone expiring leaseMs + FENCE_MEMORY_MS after the grant)', async () => {
    const engine = kit.engine();
    const redis = kit.redis();
    const names = redisNames(engine.settings.keyPrefix, 'k');
    const first = await engine.acquire('k', { leaseMs: 10_000 });
    await first.release();
    expect(await redis.exists(names.state)).toBe(0);
    expect(await redis.get(names.fence)).toBe(String(first.fencingToken));
    const ttl = await redis.pttl(names.fence);
    expect(ttl).toBeGreaterThan(FENCE_MEMORY_MS + 10_000 - 5_000);
    expect(ttl).toBeLessThanOrEqual(FENCE_MEMORY_MS + 10_000);
  });

  it("fencingMemoryMs sets the tombstone's life past the lease; 0 writes none (tokens of a free key follow the clock)", async () => {
    const short = kit.engine({ fencingMemoryMs: 5_000 });
    const redis = kit.redis();
    const names = redisNames(short.settings.keyPrefix, 'k');
    await (await short.acquire('k', { leaseMs: 10_000 })).release();
    const ttl = await redis.pttl(names.fence);
    expect(ttl).toBeGreaterThan(10_000);
    expect(ttl).toBeLessThanOrEqual(15_000);
    await (await short.acquirePermit('s', { limit: 1, leaseMs: 10_000 })).release();
    expect(await redis.pttl(redisNames(short.settings.keyPrefix, 's').fence)).toBeLessThanOrEqual(15_000);
    const none = kit.engine({ fencingMemoryMs: 0 });
    const free = redisNames(none.settings.keyPrefix, 'k');
    await (await none.acquire('k')).release();
    await (await none.acquire('k', { mode: 'read' })).release();
    await (await none.acquirePermit('s', { limit: 1 })).release();
    expect(await redis.exists(free.fence, redisNames(none.settings.keyPrefix, 's').fence)).toBe(0);
    expect(() => kit.engine({ fencingMemoryMs: -1 })).toThrow(/fencingMemoryMs/);
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
    await redis.set(names.fence, String(ahead), 'PX', FENCE_MEMORY_MS);
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
    await redis.set(names.fence, String(ahead), 'PX', FENCE_MEMORY_MS);
    const after = await other.acquire('k');
    expect(after.fencingToken).toBeGreaterThan(ahead);
    // A waiter queued behind a holder is granted by the full pass.
    const waiting = other.acquire('k', { mode: 'read', waitTimeoutMs: 5_000, fair: true });
    await sleep(50);
    // The state and the tombstone both hold the last token (each grant writes both).
    ahead = after.fencingToken + ONE_HOUR_US;
    await redis.hset(names.state, 'f', String(ahead));
    await redis.set(names.fence, String(ahead), 'PX', FENCE_MEMORY_MS);
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
    await redis.set(names.fence, String(ahead), 'PX', FENCE_MEMORY_MS);
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
