import { Cluster, Redis } from 'ioredis';
import type { RedisOptions } from 'ioredis';
import { LockConfigError } from '../errors/lock-config.error.js';

/** A connection the library sends commands on: a standalone client or a Cluster client. */
export type RedisClient = Redis | Cluster;

/** What the `redis` option accepts: a URL, ioredis options, or a client the application owns. */
export type RedisConnectionInput = string | RedisOptions | Redis | Cluster;

/** The connections the engine uses, and which of them it must close. */
export interface LockConnections {
  /** Commands: scripts, renewals. */
  readonly client: RedisClient;
  /** Dedicated subscriber connection for wake-ups (always opened by the library). */
  readonly subscriber: RedisClient;
  /** `true` when the library opened `client` (and so listens to its errors and closes it). */
  readonly owned: boolean;
  /** Closes what the library opened; a client the application passed in is left open. */
  close(): Promise<void>;
}

function isClient(input: unknown): input is Redis | Cluster {
  return input instanceof Redis || input instanceof Cluster;
}

/** Opens (or adopts) the command connection and opens the subscriber connection. */
export function openConnections(input: RedisConnectionInput | undefined): LockConnections {
  let client: RedisClient;
  let owned: boolean;
  if (isClient(input)) {
    client = input;
    owned = false;
  } else if (typeof input === 'string') {
    if (!/^rediss?:\/\//.test(input)) {
      throw new LockConfigError(
        `invalid redis: "${input}" is not a redis:// or rediss:// URL; pass a URL, ioredis options or an ioredis client`,
        'redis',
      );
    }
    client = new Redis(input);
    owned = true;
  } else if (input && typeof input === 'object') {
    client = new Redis(input);
    owned = true;
  } else {
    throw new LockConfigError(
      'missing redis option: pass a redis:// URL, ioredis RedisOptions, or an ioredis Redis or Cluster instance',
      'redis',
    );
  }
  // The subscriber must not share the command connection: a subscribed connection accepts no other commands.
  // (Two branches: `Redis.duplicate` and `Cluster.duplicate` have different signatures.)
  const subscriber: RedisClient = client instanceof Cluster ? client.duplicate() : client.duplicate();
  return {
    client,
    subscriber,
    owned,
    async close() {
      await quietly(subscriber);
      if (owned) await quietly(client);
    },
  };
}

async function quietly(c: RedisClient): Promise<void> {
  if (c.status === 'end') return;
  if (c.status !== 'ready') {
    // Not connected (Redis down, reconnecting): QUIT would wait for a connection that may never come.
    c.disconnect();
    return;
  }
  try {
    await c.quit();
  } catch {
    c.disconnect();
  }
}
