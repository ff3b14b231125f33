import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { FENCE_MEMORY_MS } from '../../lib/store/fence-memory.js';

/** The Redis the test command started (or REDIS_URL). */
export function redisUrl(): string {
  const url = process.env.REDIS_URL;
  if (!url) throw new Error('REDIS_URL is not set: run the tests with `npm test`, which starts a redis-server');
  return url;
}

/** A key prefix no other test uses. */
export function uniquePrefix(name = 't'): string {
  return `test:${name}:${randomBytes(4).toString('hex')}:`;
}

/**
 * Every Redis key under `prefix`, but the fence tombstones (`…}:fence`, the last fencing token a key issued) that
 * expire by themselves within `FENCE_MEMORY_MS` plus a lease: those are not leftovers. A tombstone without an expiry,
 * or with a longer one, is listed, as any other key. `withTombstones` lists them all.
 */
export async function keysUnder(client: Redis, prefix: string, withTombstones = false): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    found.push(...batch);
  } while (cursor !== '0');
  if (withTombstones) return found.sort();
  const kept: string[] = [];
  for (const key of found) {
    if (key.endsWith('}:fence')) {
      const ttl = await client.pttl(key);
      if (ttl > 0 && ttl <= FENCE_MEMORY_MS + MAX_TEST_LEASE_MS) continue;
    }
    kept.push(key);
  }
  return kept.sort();
}

/** Longest lease a test takes (the tombstone of a grant lives that lease plus `FENCE_MEMORY_MS`). */
const MAX_TEST_LEASE_MS = 600_000;

/** Calls per command since the last `CONFIG RESETSTAT`, from `INFO commandstats` (e.g. `{ evalsha: 3 }`). */
export async function commandStats(client: Redis): Promise<Record<string, number>> {
  const calls: Record<string, number> = {};
  for (const [, name, n] of (await client.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    calls[name] = Number(n);
  }
  return calls;
}

/** Commands the test harness itself sends (stats, setup, key listing, connection handshakes). */
const HARNESS = /^(info|config\|.*|client\|.*|ping|select|dbsize|scan|hello|command.*)$/;

/** `stats` without the harness's own commands: what the code under test sent. */
export function withoutHarness(stats: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(stats).filter(([name]) => !HARNESS.test(name)));
}
