import type { WakeUpChannels } from './wake-up-channels.js';
import type { ConnectionStateChange } from '../../store/lock-store.js';

/** @internal How the library tunes the connections it opens (the application's own settings win). */
export interface ConnectionTuning {
  readonly commandTimeoutMs: number;
}

/** One argument of a Redis command, as the library sends it. */
export type CommandArg = string | number;

/** One reply of a pipeline: the command's error (a `ReplyError` when the server refused it), or its value. */
export type PipelineReply = readonly [error: Error | null, value: unknown];

/** One master behind a driver (the server itself, or one master of a Cluster), for what must reach every master. */
export interface DriverNode {
  /** `host:port` (or the socket path), for messages. */
  readonly label: string;
  /** One command on this node. */
  send(args: readonly CommandArg[]): Promise<unknown>;
}

/** How a driver's wake-up channels report their own trouble (see `ShardedChannels`). */
export interface ChannelsContext {
  /** Bounds a connection attempt and a slot-map refresh. */
  readonly connectTimeoutMs: number;
  /** One `lost` when subscriptions go missing, one `restored` once every one is back (waiters then re-check). */
  readonly report: (change: ConnectionStateChange) => void;
}

/** The wake-up subscriptions of one store: plain pub/sub on a connection of their own, or sharded on a Cluster. */
export interface DriverChannels extends WakeUpChannels {
  /** A PING on the subscriber connection(s); rejects when it cannot be made. */
  ping(): Promise<void>;
  /** Whether the subscriber connection is up now. */
  readonly connected: boolean;
  /** Closes the subscriber connection(s) the driver opened; never rejects. */
  close(): Promise<void>;
}

/** A change of the command connection: `down` (closed or failed while up; not a close on purpose), `up` (ready). */
export type ConnectionEvent = { readonly state: 'up' } | { readonly state: 'down'; readonly error: unknown };

/**
 * The one seam between the library and a Redis client (ioredis, iovalkey, node-redis v5 and v6, Valkey GLIDE): what the
 * stores, the script gateway, the start-up check and the key scan need of a connection, and nothing else. A driver
 * turns the server's error replies into `ReplyError`s whose message starts with the server's code (`NOSCRIPT …`), and
 * never closes a client the application passed in.
 */
export interface RedisDriver {
  /** The client's name, for messages: `ioredis`, `iovalkey`, `node-redis`, `Valkey GLIDE`. */
  readonly client: string;
  /** Whether the connection is a Redis Cluster client (scripts then wake waiters by sharded pub/sub). */
  readonly cluster: boolean;
  /** What the client itself adds in front of every key name it sends (ioredis' `keyPrefix`), `''` for none. */
  readonly keyPrefix: string;
  /** Whether the library opened the connection (and so closes it, and listens to its errors). */
  readonly owned: boolean;
  /** Whether the command connection is up now, as far as the client knows. */
  readonly connected: boolean;
  /**
   * The client's own bound on one command, where it has one the driver can read (GLIDE's `requestTimeout`, node-redis'
   * command timeout): its value in milliseconds, its name, and the setting that changes it (for the start-up check).
   */
  readonly clientTimeout?: { readonly ms: number; readonly name: string; readonly setting: string };
  /** `EVALSHA sha numkeys …keys …args`, routed by the first key on a Cluster. */
  evalsha(sha: string, keys: readonly string[], args: readonly CommandArg[]): Promise<unknown>;
  /** `EVAL source numkeys …keys …args`, routed by the first key on a Cluster. */
  eval(source: string, keys: readonly string[], args: readonly CommandArg[]): Promise<unknown>;
  /** One command; on a Cluster it goes to the master of `key`'s slot (any master without a key). */
  send(args: readonly CommandArg[], key?: string): Promise<unknown>;
  /**
   * Commands sent in one round trip on one connection, in order (on a Cluster, the connection to the master of `key`'s
   * slot): `WAIT` after a script counts that script's writes. Resolves with one reply per command; rejects only when
   * none could be sent.
   */
  pipeline(commands: readonly (readonly CommandArg[])[], key?: string): Promise<PipelineReply[]>;
  /** Every master now (one for a server or a Sentinel master; empty while a Cluster's map is unknown). */
  masters(): readonly DriverNode[];
  /** Resolves `true` once the client is connected (and a Cluster's map known), `false` after `timeoutMs`. */
  whenReady(timeoutMs: number): Promise<boolean>;
  /** On a Cluster, the `host:port` of the master serving `slot` in the client's map, when the driver knows it. */
  masterOfSlot(slot: number): string | undefined;
  /** Asks a Cluster client to reload its slot map; resolves when it did, or after `timeoutMs`. */
  refreshSlots(timeoutMs: number): Promise<void>;
  /**
   * Listens to the command connection: `down` when it closes or fails while up, `up` when it is ready again. With
   * `errors: false` (a client of the application's) the client's error events are left to the application's own
   * listeners. Returns what stops listening.
   */
  onConnection(listener: (event: ConnectionEvent) => void, options: { readonly errors: boolean }): () => void;
  /** The wake-up subscriptions (a connection the driver opens for them; per master on a Cluster). */
  channels(context: ChannelsContext): DriverChannels;
  /** Closes what the library opened (bounded by `timeoutMs`); a client of the application's is left open. */
  close(timeoutMs: number): Promise<void>;
}
