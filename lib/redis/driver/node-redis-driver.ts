import type { NodeRedisLike } from './client-family.js';
import { outageReporter } from './connection-watch.js';
import { isReplyError, ReplyError } from './reply-error.js';
import type {
  ChannelsContext,
  CommandArg,
  ConnectionEvent,
  DriverChannels,
  DriverNode,
  PipelineReply,
  RedisDriver,
  ConnectionTuning,
} from './redis-driver.js';

type Listener = (message: string, channel: string) => void;

/** The members of a node-redis client, cluster or sentinel the driver calls (all three are event emitters). */
interface NodeRedisAny extends NodeRedisLike {
  on(event: string, listener: (...args: never[]) => void): unknown;
  off(event: string, listener: (...args: never[]) => void): unknown;
  readonly masters?: readonly { readonly address: string }[];
  readonly slots?: readonly ({ readonly master: { readonly address: string } } | undefined)[];
  nodeClient?(node: unknown): Promise<NodeRedisAny>;
  acquire?(): unknown;
  duplicate?(): NodeRedisAny;
  SUBSCRIBE(channel: string, listener: Listener): Promise<unknown>;
  UNSUBSCRIBE(channel: string, listener: Listener): Promise<unknown>;
  SSUBSCRIBE(channel: string, listener: Listener): Promise<unknown>;
  SUNSUBSCRIBE(channel: string, listener: Listener): Promise<unknown>;
  close?(): Promise<unknown>;
  destroy?(): unknown;
}

/**
 * The driver for node-redis v5 and v6 clients: a client (`createClient`), a cluster (`createCluster`: commands routed by
 * their first key, wake-ups by the cluster's sharded pub/sub) or a sentinel (`createSentinel`). Commands go through
 * `sendCommand`; the server's error replies (`ErrorReply`) become `ReplyError`s. The application connects its client
 * (until it does, calls fail as unavailable) and closes it: the library closes only the subscriber it duplicated.
 */
export class NodeRedisDriver implements RedisDriver {
  readonly client = 'node-redis';
  readonly owned = false;
  readonly keyPrefix = '';
  readonly cluster: boolean;
  private readonly sentinel: boolean;
  private readonly c: NodeRedisAny;

  constructor(input: NodeRedisLike, _tuning: ConnectionTuning) {
    this.c = input as NodeRedisAny;
    this.cluster = typeof this.c.nodeClient === 'function' && 'masters' in this.c;
    this.sentinel = !this.cluster && typeof this.c.acquire === 'function';
  }

  get connected(): boolean {
    return this.c.isReady ?? this.c.isOpen;
  }

  /**
   * The client's command timeout (`commandOptions.timeout`; node-redis 6 sets 5 s by default, 5 none), from the
   * client (or cluster) or, for a sentinel, from its options.
   */
  get clientTimeout(): { readonly ms: number; readonly name: string; readonly setting: string } | undefined {
    const c = this.c as {
      _commandOptions?: { timeout?: unknown };
      options?: { commandOptions?: { timeout?: unknown } };
    };
    const ms = c._commandOptions?.timeout ?? c.options?.commandOptions?.timeout;
    if (typeof ms !== 'number' || ms <= 0) return undefined;
    return { ms, name: 'command timeout', setting: 'commandOptions.timeout in the node-redis client options' };
  }

  evalsha(sha: string, keys: readonly string[], args: readonly CommandArg[]): Promise<unknown> {
    return this.send(['EVALSHA', sha, keys.length, ...keys, ...args], keys[0]);
  }

  eval(source: string, keys: readonly string[], args: readonly CommandArg[]): Promise<unknown> {
    return this.send(['EVAL', source, keys.length, ...keys, ...args], keys[0]);
  }

  send(args: readonly CommandArg[], key?: string): Promise<unknown> {
    const all = args.map(String);
    const c = this.c as unknown as {
      sendCommand(...a: unknown[]): Promise<unknown>;
    };
    const sent = this.cluster
      ? c.sendCommand(key, false, all)
      : this.sentinel
        ? c.sendCommand(false, all)
        : c.sendCommand(all);
    return sent.catch(rethrow);
  }

  async pipeline(commands: readonly (readonly CommandArg[])[], key?: string): Promise<PipelineReply[]> {
    // Sent in one tick on one connection (node-redis writes a tick's commands together, in order), each settled on its
    // own: its `multi().execAsPipeline()` rejects with the first error reply alone (node-redis 5 and 6), losing the
    // replies of the others, which ran all the same (a NOSCRIPT must not lose the WAIT after it).
    const settled = await Promise.allSettled(commands.map((command) => this.send(command, key)));
    if (settled.every((r) => r.status === 'rejected' && !isReplyError(r.reason))) {
      throw (settled[0] as PromiseRejectedResult).reason;
    }
    return settled.map((r) => (r.status === 'fulfilled' ? [null, r.value] : [r.reason as Error, undefined]));
  }

  masters(): readonly DriverNode[] {
    if (!this.cluster) return [{ label: this.label(), send: (args) => this.send(args) }];
    return (this.c.masters ?? []).map((node) => ({
      label: node.address,
      send: async (args: readonly CommandArg[]) => {
        const client = await (this.c.nodeClient as (n: unknown) => Promise<NodeRedisAny>)(node);
        return (client as unknown as { sendCommand(a: string[]): Promise<unknown> })
          .sendCommand(args.map(String))
          .catch(rethrow);
      },
    }));
  }

  /** `host:port` of a client (from its URL or socket options), for messages; the sentinel's master name otherwise. */
  private label(): string {
    const o = (this.c as { options?: { url?: string; socket?: { host?: string; port?: number }; name?: string } })
      .options;
    if (o?.url) {
      const at = new URL(o.url);
      return `${at.hostname}:${at.port || 6379}`;
    }
    if (o?.socket?.host || o?.socket?.port) return `${o.socket.host ?? 'localhost'}:${o.socket.port ?? 6379}`;
    return this.sentinel ? `the Sentinel master ${o?.name ?? ''}`.trim() : 'the node-redis client';
  }

  async whenReady(timeoutMs: number): Promise<boolean> {
    if (this.connected) return true;
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => done(), timeoutMs).unref();
      const done = () => {
        clearTimeout(timer);
        this.c.off('ready', done);
        resolve(this.connected);
      };
      this.c.on('ready', done);
    });
  }

  masterOfSlot(slot: number): string | undefined {
    return this.cluster ? this.c.slots?.[slot]?.master.address : undefined;
  }

  async refreshSlots(): Promise<void> {
    // node-redis reloads its slot map itself on MOVED.
  }

  onConnection(listener: (event: ConnectionEvent) => void, options: { readonly errors: boolean }): () => void {
    return watchNodeRedis(this.c, listener, options);
  }

  channels(context: ChannelsContext): DriverChannels {
    // A subscriber of its own (a subscribed connection takes no other commands); a sentinel keeps one already.
    const sub = this.sentinel || !this.c.duplicate ? this.c : this.c.duplicate();
    const own = sub !== this.c;
    const report = outageReporter('subscriber', context.report);
    const stop = own ? watchNodeRedis(sub, report, { errors: true }) : () => undefined;
    const connecting = own ? sub.connect().catch(() => undefined) : undefined;
    const listeners = new Map<string, Listener>();
    let handler: (channel: string, message: string) => void = () => undefined;
    const subscribe = this.cluster ? sub.SSUBSCRIBE.bind(sub) : sub.SUBSCRIBE.bind(sub);
    const unsubscribe = this.cluster ? sub.SUNSUBSCRIBE.bind(sub) : sub.UNSUBSCRIBE.bind(sub);
    return {
      subscribe: async (channel) => {
        await connecting;
        const listener: Listener = (message, ch) => handler(ch, message);
        listeners.set(channel, listener);
        await subscribe(channel, listener).catch(rethrow);
      },
      unsubscribe: async (channel) => {
        const listener = listeners.get(channel);
        listeners.delete(channel);
        if (listener && sub.isOpen) await unsubscribe(channel, listener).catch(rethrow);
      },
      onMessage: (h) => {
        handler = h;
      },
      isSubscribed: () => true,
      ping: async () => {
        await connecting;
        if (this.cluster || !own) await this.send(['PING']);
        else await (sub as unknown as { sendCommand(a: string[]): Promise<unknown> }).sendCommand(['PING']);
      },
      get connected() {
        return sub.isOpen && (sub.isReady ?? true);
      },
      close: async () => {
        stop();
        if (!own) {
          await Promise.allSettled([...listeners].map(([channel, l]) => unsubscribe(channel, l)));
          listeners.clear();
          return;
        }
        listeners.clear();
        await closeWithin(sub, context.connectTimeoutMs);
      },
    };
  }

  async close(): Promise<void> {
    // The application's client: left open.
  }
}

/** `down` on `reconnecting` (the socket dropped) or an error (with `errors`), `up` on `ready`. */
function watchNodeRedis(
  c: NodeRedisAny,
  listener: (event: ConnectionEvent) => void,
  { errors }: { readonly errors: boolean },
): () => void {
  const onError = (error: unknown) => listener({ state: 'down', error });
  const onReconnecting = () => listener({ state: 'down', error: new Error('connection closed') });
  const onReady = () => listener({ state: 'up' });
  if (errors) c.on('error', onError);
  c.on('reconnecting', onReconnecting);
  c.on('ready', onReady);
  return () => {
    c.off('error', onError);
    c.off('reconnecting', onReconnecting);
    c.off('ready', onReady);
  };
}

/** Closes a connection the driver opened, at once when it cannot answer; never rejects. */
async function closeWithin(c: NodeRedisAny, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    if (!c.isReady) throw new Error('not connected');
    await Promise.race([c.close?.(), new Promise((_, reject) => (timer = setTimeout(reject, timeoutMs)))]);
  } catch {
    try {
      c.destroy?.();
    } catch {
      // Closed already.
    }
  } finally {
    clearTimeout(timer);
  }
}

/** Whether `err` is node-redis' `ErrorReply` (an error reply of the server), of whichever copy of node-redis. */
function isErrorReply(err: unknown): boolean {
  for (let p: unknown = err; p && p !== Error.prototype; p = Object.getPrototypeOf(p)) {
    const name = (p as { constructor?: { name?: string } }).constructor?.name;
    if (name === 'ErrorReply' || name === 'SimpleError' || name === 'BlobError') return true;
  }
  return false;
}

function toReplyError(err: Error): Error {
  return isErrorReply(err) ? new ReplyError(err.message, { cause: err }) : err;
}

function rethrowable(err: unknown): unknown {
  return err instanceof Error ? toReplyError(err) : err;
}

function rethrow(err: unknown): never {
  throw rethrowable(err);
}
