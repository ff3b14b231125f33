import { Cluster, Command, Redis } from 'ioredis';
import type { RedisOptions } from 'ioredis';
import { plainChannels } from './wake-up-channels.js';
import { ShardedChannels } from './sharded-channels.js';
import { outageReporter, watchEvents } from './connection-watch.js';
import type {
  ChannelsContext,
  CommandArg,
  ConnectionEvent,
  DriverChannels,
  DriverNode,
  PipelineReply,
  RedisDriver,
} from './redis-driver.js';

/** A client of the ioredis family: ioredis itself (any copy) or iovalkey, its fork, which keeps its API. */
export type IoredisLike = Redis | Cluster;

/**
 * The driver for ioredis and iovalkey clients (a `Redis`, a Sentinel-backed `Redis` or a `Cluster`), used through
 * the client's own methods, so a client of another copy of ioredis, or of iovalkey, works as the library's own does.
 * On the library's own ioredis an `EVALSHA` skips the command methods' argument copying (see `evalsha`).
 */
export class IoredisDriver implements RedisDriver {
  readonly cluster: boolean;
  readonly keyPrefix: string;
  /** Whether `client` comes from the ioredis this library imports (its `Command` can then be used directly). */
  private readonly native: boolean;

  constructor(
    private readonly c: IoredisLike,
    readonly owned: boolean,
    readonly client: string,
    /** Options for the connections this driver opens itself (the subscriber). */
    private readonly defaults: RedisOptions,
  ) {
    this.cluster = c.isCluster === true;
    this.keyPrefix = (c.options as { keyPrefix?: string }).keyPrefix ?? '';
    this.native = c instanceof Redis || c instanceof Cluster;
  }

  get connected(): boolean {
    return this.c.status === 'ready';
  }

  evalsha(sha: string, keys: readonly string[], args: readonly CommandArg[]): Promise<unknown> {
    if (!this.native || this.keyPrefix) return this.c.evalsha(sha, keys.length, ...keys, ...args);
    return sendEvalsha(this.c, sha, keys, args);
  }

  eval(source: string, keys: readonly string[], args: readonly CommandArg[]): Promise<unknown> {
    return this.c.eval(source, keys.length, ...keys, ...args);
  }

  send(args: readonly CommandArg[], _key?: string): Promise<unknown> {
    // ioredis routes a command by the keys its command table names (a keyless one goes to any master).
    return this.c.call(String(args[0]), ...args.slice(1));
  }

  async pipeline(commands: readonly (readonly CommandArg[])[], _key?: string): Promise<PipelineReply[]> {
    // A pipeline goes to one connection: on a Cluster, the master of the slot of its commands' keys.
    const p = this.c.pipeline();
    for (const command of commands) p.call(String(command[0]), ...command.slice(1));
    const results = await p.exec();
    if (!results) throw new Error('the pipeline was discarded (connection closed)');
    return results;
  }

  masters(): readonly DriverNode[] {
    const nodes: Redis[] = this.cluster ? (this.c as Cluster).nodes('master') : [this.c as Redis];
    return nodes.map((node) => ({
      label: labelOf(node),
      send: (args: readonly CommandArg[]) => node.call(String(args[0]), ...args.slice(1)),
    }));
  }

  whenReady(timeoutMs: number): Promise<boolean> {
    if (this.c.status === 'ready') return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      // Unref: a start-up probe must not keep the process alive (an engine closed at once, a Cluster never ready).
      const timer = setTimeout(() => done(false), timeoutMs).unref();
      const onReady = () => done(true);
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.c.off('ready', onReady);
        resolve(ok);
      };
      this.c.once('ready', onReady);
    });
  }

  masterOfSlot(slot: number): string | undefined {
    return this.cluster ? (this.c as Cluster).slots[slot]?.[0] : undefined;
  }

  refreshSlots(timeoutMs: number): Promise<void> {
    if (!this.cluster) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      timer.unref();
      (this.c as Cluster).refreshSlotsCache(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  onConnection(listener: (event: ConnectionEvent) => void, options: { readonly errors: boolean }): () => void {
    return watchEvents(this.c, listener, options);
  }

  channels(context: ChannelsContext): DriverChannels {
    if (this.cluster) {
      const cluster = this.c as Cluster;
      return new ShardedChannels(cluster, context, connectLike(cluster));
    }
    // The subscriber must not share the command connection: a subscribed connection accepts no other commands.
    const sub = (this.c as Redis).duplicate(this.defaults);
    const channels = plainChannels(sub);
    const stop = watchEvents(sub, outageReporter('subscriber', context.report), { errors: true });
    return {
      ...channels,
      ping: async () => {
        await sub.ping();
      },
      get connected() {
        return sub.status === 'ready';
      },
      close: async () => {
        stop();
        await quietly(sub, context.connectTimeoutMs);
      },
    };
  }

  close(timeoutMs: number): Promise<void> {
    return this.owned ? quietly(this.c, timeoutMs) : Promise.resolve();
  }
}

/**
 * Opens a connection of `cluster`'s own library (ioredis, another copy of it, or iovalkey, whose instances do not
 * name their class): a new `Redis` for the library's own ioredis, else a duplicate of a known node with `options`.
 */
function connectLike(cluster: Cluster): (options: RedisOptions) => Redis {
  if (cluster instanceof Cluster) return (options) => new Redis(options);
  return (options) => {
    const node = (cluster as Cluster).nodes('all')[0];
    if (!node) throw new Error('no Cluster node is known yet to open a subscriber connection like it');
    return node.duplicate({ ...options, keyPrefix: undefined });
  };
}

const NO_ARGS: never[] = [];

/**
 * `EVALSHA sha numkeys ...keys ...args`, its argument list laid out once. ioredis' command methods copy every
 * argument through `Array.prototype.flat`, about 65 ns each on Node 20: 1 µs for one acquisition, 14 µs for a batch
 * of 16, the largest single cost of a batched cycle. The command goes through the client's `sendCommand` like any
 * other (offline queue, Cluster routing by its first key, reconnects). Not for a client with its own `keyPrefix`,
 * whose command methods prefix the KEYS.
 */
function sendEvalsha(
  client: IoredisLike,
  sha: string,
  keys: readonly string[],
  args: readonly CommandArg[],
): Promise<unknown> {
  const command = new Command('evalsha', NO_ARGS, {
    replyEncoding: 'utf8',
    errorStack: client.options.showFriendlyErrorStack ? new Error() : undefined,
  });
  // As the command methods would send them: every argument a string (the numbers here are small integers).
  const all = new Array<string>(2 + keys.length + args.length);
  all[0] = sha;
  all[1] = String(keys.length);
  let i = 2;
  for (const key of keys) all[i++] = key;
  for (const arg of args) all[i++] = typeof arg === 'string' ? arg : String(arg);
  command.args = all;
  void client.sendCommand(command);
  return command.promise;
}

/** Closes `c`: QUIT when connected (bounded by `timeoutMs`, Redis may be paused), else at once. Never rejects. */
export async function quietly(c: IoredisLike, timeoutMs: number): Promise<void> {
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

function labelOf(node: Redis): string {
  const { host, port, path } = node.options;
  return path ?? `${host ?? '127.0.0.1'}:${port ?? 6379}`;
}
