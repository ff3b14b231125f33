import { performance } from 'node:perf_hooks';
import { Cluster, Redis } from 'ioredis';
import type { RedisOptions } from 'ioredis';
import { describeForeignClient } from './foreign-client.js';
import { LockConfigError } from '../errors/lock-config.error.js';
import type { ConnectionStateChange } from '../store/lock-store.js';

/** A connection the library sends commands on: a standalone client or a Cluster client. */
export type RedisClient = Redis | Cluster;

/** What the `redis` option accepts: a URL, ioredis options, or a client the application owns. */
export type RedisConnectionInput = string | RedisOptions | Redis | Cluster;

/** The connections the engine uses, and which of them it must close. */
export interface LockConnections {
  /** Commands: scripts, renewals. */
  readonly client: RedisClient;
  /**
   * Dedicated subscriber connection for wake-ups (opened by the library); `null` on a Cluster, where the store
   * subscribes on each master's own connection (sharded pub/sub, see `ShardedChannels`).
   */
  readonly subscriber: Redis | null;
  /** `true` when the library opened `client` (and so listens to its errors and closes it). */
  readonly owned: boolean;
  /** Closes what the library opened; a client the application passed in is left open. */
  close(): Promise<void>;
}

function isClient(input: unknown): input is Redis | Cluster {
  return input instanceof Redis || input instanceof Cluster;
}

/** @internal How the library tunes the connections it opens (the application's own settings win). */
export interface ConnectionTuning {
  readonly commandTimeoutMs: number;
}

/**
 * @internal Defaults for connections the library opens: a command queued while disconnected fails after one reconnect
 * attempt instead of twenty (the library bounds each call anyway; this keeps the offline queue short), a
 * connection attempt that gets no answer is given up after the command timeout (at least one second), and closing
 * a connection that is still reconnecting does not keep the process alive for two seconds.
 */
export function ownedConnectionDefaults(tuning: ConnectionTuning): RedisOptions {
  return { maxRetriesPerRequest: 1, connectTimeout: Math.max(tuning.commandTimeoutMs, 1_000), disconnectTimeout: 200 };
}

/** @internal Opens (or adopts) the command connection and opens the subscriber connection. */
export function openConnections(
  input: RedisConnectionInput | undefined,
  tuning: ConnectionTuning = { commandTimeoutMs: 2_000 },
): LockConnections {
  const defaults = ownedConnectionDefaults(tuning);
  let client: RedisClient;
  let owned: boolean;
  if (isClient(input)) {
    if (input instanceof Cluster && typeof (Redis.prototype as { ssubscribe?: unknown }).ssubscribe !== 'function') {
      throw new LockConfigError(
        'invalid redis: this ioredis has no sharded pub/sub (ssubscribe), which the library uses on a Redis Cluster; upgrade ioredis',
        'redis',
      );
    }
    client = input;
    owned = false;
  } else if (typeof input === 'string') {
    if (!/^rediss?:\/\//.test(input)) {
      throw new LockConfigError(
        `invalid redis: "${input}" is not a redis:// or rediss:// URL; pass a URL, ioredis options or an ioredis client`,
        'redis',
      );
    }
    client = new Redis(input, defaults);
    owned = true;
  } else if (input && typeof input === 'object') {
    const foreign = describeForeignClient(input);
    if (foreign) {
      throw new LockConfigError(
        `invalid redis: received ${foreign}, which is not an ioredis client; pass an ioredis Redis or Cluster ` +
          '(of the ioredis that nest-redis-locks resolves), a redis:// URL, or ioredis options (node-redis, iovalkey ' +
          'and Valkey GLIDE clients are not supported yet)',
        'redis',
      );
    }
    client = new Redis({ ...defaults, ...input });
    owned = true;
  } else {
    throw new LockConfigError(
      'missing redis option: pass a redis:// URL, ioredis RedisOptions, or an ioredis Redis or Cluster instance',
      'redis',
    );
  }
  // The subscriber must not share the command connection: a subscribed connection accepts no other commands.
  const subscriber = client instanceof Cluster ? null : client.duplicate(defaults);
  return {
    client,
    subscriber,
    owned,
    async close() {
      await Promise.all([
        subscriber ? quietly(subscriber, tuning.commandTimeoutMs) : undefined,
        owned ? quietly(client, tuning.commandTimeoutMs) : undefined,
      ]);
    },
  };
}

/** Closes `c`: QUIT when connected (bounded by `timeoutMs`, Redis may be paused), else at once. Never rejects. */
async function quietly(c: RedisClient, timeoutMs: number): Promise<void> {
  if (c.status === 'end') return;
  if (c.status !== 'ready') {
    // Not connected (Redis down, reconnecting): QUIT would wait for a connection that may never come.
    c.disconnect();
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([c.quit(), new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
  } catch {
    // Closing anyway.
  } finally {
    clearTimeout(timer);
    if ((c.status as string) !== 'end') c.disconnect();
  }
}

/**
 * @internal Reports a connection's trouble once per outage: the first error after it was up (`lost`), then nothing
 * until it
 * is ready again (`restored`, with how long it was down). ioredis emits an error per reconnect attempt; this turns
 * them into one line when the connection drops and one when it is back. `errors: false` watches closes only, for a
 * client the application passed in: its errors stay its own listeners' business (an `error` listener would also
 * silence ioredis' "Unhandled error event" lines for the application).
 */
export function watchConnection(
  c: RedisClient,
  connection: ConnectionStateChange['connection'],
  report: (change: ConnectionStateChange) => void,
  { errors = true }: { readonly errors?: boolean } = {},
): void {
  let downSince: number | undefined;
  const down = (error: unknown) => {
    if (downSince !== undefined) return;
    downSince = performance.now();
    report({ connection, state: 'lost', error });
  };
  if (errors) c.on('error', down);
  c.on('close', () => {
    // A close while up (server gone, network reset) is an outage even without an error; closing on purpose is not.
    if (c.status !== 'end' && !closingOnPurpose(c)) down(new Error('connection closed'));
  });
  c.on('ready', () => {
    if (downSince === undefined) return;
    const downMs = performance.now() - downSince;
    downSince = undefined;
    report({ connection, state: 'restored', downMs });
  });
}

function closingOnPurpose(c: RedisClient): boolean {
  return (c as unknown as { manuallyClosing?: boolean }).manuallyClosing === true || c.status === 'end';
}
