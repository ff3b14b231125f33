import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';

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
 * Every Redis key under `prefix`, but the fence floors (`<prefix>fence:{<tag>}`, one per hash slot used, holding the
 * largest fencing token of the slot): they are kept on purpose, never expire, and are bounded by the number of slots.
 * `withFloors` lists them too.
 */
export async function keysUnder(client: Redis, prefix: string, withFloors = false): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    found.push(...batch);
  } while (cursor !== '0');
  const floor = /^fence:\{[0-9a-z]+\}$/;
  return found.filter((key) => withFloors || !floor.test(key.slice(prefix.length))).sort();
}

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
