import { Cluster, Redis } from 'ioredis';
import type { RedisOptions } from 'ioredis';
import { describeForeignClient, describeNonOptions } from './foreign-client.js';
import { LockConfigError } from '../errors/lock-config.error.js';
import { IoredisDriver } from './driver/ioredis-driver.js';
import { clientFamily } from './driver/client-family.js';
import type { GlideClientLike, IovalkeyLike, NodeRedisLike } from './driver/client-family.js';
import { GlideDriver } from './driver/glide-driver.js';
import { NodeRedisDriver } from './driver/node-redis-driver.js';
import type { ConnectionTuning, RedisDriver } from './driver/redis-driver.js';

/**
 * What the `redis` option accepts: a URL, ioredis options, or a client the application owns: ioredis or iovalkey
 * (`Redis`, `Cluster`), node-redis v5 or v6 (`createClient`, `createCluster`, `createSentinel`) or Valkey GLIDE
 * (`GlideClient`, `GlideClusterClient`), told apart by what they are, not declared.
 */
export type RedisConnectionInput =
  string | RedisOptions | Redis | Cluster | IovalkeyLike | NodeRedisLike | GlideClientLike;

/**
 * @internal Defaults for connections the library opens: a command queued while disconnected fails after one reconnect
 * attempt instead of twenty (the library bounds each call anyway; this keeps the offline queue short), a
 * connection attempt that gets no answer is given up after the command timeout (at least one second), and closing
 * a connection that is still reconnecting does not keep the process alive for two seconds.
 */
export function ownedConnectionDefaults(tuning: ConnectionTuning): RedisOptions {
  return { maxRetriesPerRequest: 1, connectTimeout: Math.max(tuning.commandTimeoutMs, 1_000), disconnectTimeout: 200 };
}

const ACCEPTED =
  'a redis:// URL, ioredis options, or a client of ioredis, iovalkey, node-redis v5 or v6 (createClient, ' +
  'createCluster, createSentinel) or Valkey GLIDE (GlideClient, GlideClusterClient)';

/**
 * @internal The driver for `input`: a connection the library opens (a URL or ioredis options: ioredis), or the
 * application's own client, whose library is recognised by its shape (no package is loaded for it).
 * @throws {LockConfigError} naming `redis` for anything else, which is never taken for connection options (see
 * `describeNonOptions`), and for a node-redis client the application has not connected.
 */
export function openDriver(
  input: RedisConnectionInput | undefined,
  tuning: ConnectionTuning = { commandTimeoutMs: 2_000 },
): RedisDriver {
  const defaults = ownedConnectionDefaults(tuning);
  if (typeof input === 'string') {
    if (!/^rediss?:\/\//.test(input)) {
      throw new LockConfigError(
        `invalid redis: "${input}" is not a redis:// or rediss:// URL; pass ${ACCEPTED}`,
        'redis',
      );
    }
    return new IoredisDriver(new Redis(input, defaults), true, 'ioredis', defaults);
  }
  if (input === undefined || input === null || (input as unknown) === '') {
    throw new LockConfigError(`missing redis option: pass ${ACCEPTED}`, 'redis');
  }
  if (typeof input !== 'object' || typeof (input as { then?: unknown }).then === 'function') {
    throw new LockConfigError(`invalid redis: received ${describeNonOptions(input)}; pass ${ACCEPTED}`, 'redis');
  }
  const family = clientFamily(input);
  switch (family) {
    case 'ioredis': {
      const client = input as Redis | Cluster;
      const own = input instanceof Redis || input instanceof Cluster;
      // The subscriber connections of a Cluster are `Redis` connections of the client's own library.
      const node = own ? Redis.prototype : (client as { ssubscribe?: unknown });
      if (client.isCluster && typeof node.ssubscribe !== 'function') {
        throw new LockConfigError(
          'invalid redis: this ioredis has no sharded pub/sub (ssubscribe), which the library uses on a Redis Cluster; upgrade ioredis',
          'redis',
        );
      }
      return new IoredisDriver(client, false, own ? 'ioredis' : 'iovalkey', defaults);
    }
    case 'node-redis':
      if (!(input as NodeRedisLike).isOpen) {
        throw new LockConfigError(
          'invalid redis: the node-redis client is not connected (never connected, or closed): call ' +
            '`await client.connect()` before passing it; the library never connects or closes the application’s client',
          'redis',
        );
      }
      return new NodeRedisDriver(input as NodeRedisLike, tuning);
    case 'glide':
      return new GlideDriver(input as GlideClientLike, tuning);
    default: {
      const refused = describeForeignClient(input) ?? describeNonOptions(input);
      if (refused) {
        throw new LockConfigError(`invalid redis: received ${refused}, which is none of ${ACCEPTED}`, 'redis');
      }
      return new IoredisDriver(new Redis({ ...defaults, ...(input as RedisOptions) }), true, 'ioredis', defaults);
    }
  }
}
