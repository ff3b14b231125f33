import { performance } from 'node:perf_hooks';
import type { Cluster, Redis, RedisOptions } from 'ioredis';
import type { ChannelsContext, DriverChannels } from './redis-driver.js';
import { slotOf } from './slot.js';
import { errorText } from '../../common/error-text.js';

/** Pause between two attempts to move lost subscriptions to the masters that now serve their slots. */
const REROUTE_RETRY_MS = 200;
/** MOVED replies followed for one SSUBSCRIBE before giving up. */
const MAX_REDIRECTS = 5;

/**
 * Sharded pub/sub on a Redis Cluster (Redis 7.0+): each lock channel is SSUBSCRIBEd on the master that serves its slot
 * (the channel shares the lock's hash tag), over one subscriber connection per master, and the Cluster variants of the
 * scripts SPUBLISH there. A wake-up so stays on its shard instead of crossing the cluster bus to every node.
 *
 * The slot map is the command client's (the application's `Cluster`). When a master's connection closes (the node
 * died, a failover) or the node drops a subscription because its slot moved away (an unsolicited SUNSUBSCRIBE, which
 * ioredis reports as `moved`), the channels it carried are reported `lost`, the slot map is refreshed and they are
 * subscribed again on their current masters, every 200 ms until that works; then `restored` is reported, so every
 * waiter re-checks its lock (a wake-up sent meanwhile may be lost). A MOVED reply to an SSUBSCRIBE is followed.
 */
export class ShardedChannels implements DriverChannels {
  /** Subscriber connection per master, by `host:port`. */
  private readonly nodes = new Map<string, Redis>();
  /** Channel → master it is subscribed on (confirmed). */
  private readonly routes = new Map<string, string>();
  /** Channels to keep subscribed. */
  private readonly wanted = new Set<string>();
  private handler: (channel: string, message: string) => void = () => undefined;
  private downSince: number | undefined;
  private rerouting: Promise<void> | undefined;
  private dirty = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private wakeRetry: (() => void) | undefined;
  private closed = false;

  constructor(
    private readonly cluster: Cluster,
    private readonly context: ChannelsContext,
    /** Opens a connection of the cluster client's own library (ioredis, or iovalkey). */
    private readonly connect: (options: RedisOptions) => Redis,
  ) {}

  /** Whether every wanted channel is subscribed (no subscription waits for its slot's master). */
  get connected(): boolean {
    return this.downSince === undefined;
  }

  onMessage(handler: (channel: string, message: string) => void): void {
    this.handler = handler;
  }

  isSubscribed(channel: string): boolean {
    return this.routes.has(channel);
  }

  async subscribe(channel: string): Promise<void> {
    this.wanted.add(channel);
    try {
      await this.subscribeOn(channel, await this.masterOf(channel), 0);
    } catch (err) {
      if (!this.routes.has(channel)) this.wanted.delete(channel);
      throw err;
    }
  }

  async unsubscribe(channel: string): Promise<void> {
    this.wanted.delete(channel);
    const node = this.routes.get(channel);
    this.routes.delete(channel);
    const conn = node === undefined ? undefined : this.nodes.get(node);
    if (conn && conn.status === 'ready') await conn.sunsubscribe(channel);
  }

  /** PING on every master's subscriber connection (the command client when there is none yet). */
  async ping(): Promise<void> {
    if (this.downSince !== undefined) {
      const missing = [...this.wanted].filter((c) => !this.routes.has(c)).length;
      if (missing > 0) throw new Error(`${missing} wake-up subscription(s) wait for the Cluster master of their slot`);
    }
    const conns = [...this.nodes.values()];
    if (conns.length === 0) await this.cluster.ping();
    else await Promise.all(conns.map((c) => c.ping()));
  }

  /** Closes every subscriber connection; stops re-subscribing. */
  close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.wakeRetry?.();
    for (const conn of this.nodes.values()) conn.disconnect();
    this.nodes.clear();
    this.routes.clear();
    this.wanted.clear();
    return Promise.resolve();
  }

  private async subscribeOn(channel: string, node: string, redirects: number): Promise<void> {
    const conn = this.connection(node);
    try {
      await conn.ssubscribe(channel);
    } catch (err) {
      const moved = /^MOVED \d+ (\S+)/.exec(errorText(err));
      if (moved && redirects < MAX_REDIRECTS) {
        this.cluster.refreshSlotsCache();
        return this.subscribeOn(channel, moved[1], redirects + 1);
      }
      throw err;
    }
    if (!this.wanted.has(channel)) {
      // Unsubscribed meanwhile.
      conn.sunsubscribe(channel).catch(() => undefined);
      return;
    }
    if (this.nodes.get(node) !== conn) {
      // The connection was lost before the confirmation arrived: subscribe again where the slot is now.
      this.kick();
      return;
    }
    this.routes.set(channel, node);
  }

  /** The master serving `channel`'s slot, refreshing the slot map once when it is not known. */
  private async masterOf(channel: string): Promise<string> {
    let node = this.masterFor(channel);
    if (node === undefined) {
      await this.refreshSlots();
      node = this.masterFor(channel);
    }
    if (node === undefined) throw new Error(`no Redis Cluster master is known for the slot of "${channel}"`);
    return node;
  }

  private masterFor(channel: string): string | undefined {
    return this.cluster.slots[slotOf(channel)]?.[0];
  }

  private refreshSlots(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, this.context.connectTimeoutMs);
      timer.unref();
      this.cluster.refreshSlotsCache(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private connection(node: string): Redis {
    const existing = this.nodes.get(node);
    if (existing) return existing;
    const at = node.lastIndexOf(':');
    const { keyPrefix: _ignored, ...base }: RedisOptions = this.cluster.options.redisOptions ?? {};
    const conn = this.connect({
      ...base,
      host: node.slice(0, at),
      port: Number(node.slice(at + 1)),
      // A lost node is not reconnected to: its channels move to whichever master serves their slots by then.
      retryStrategy: () => null,
      enableOfflineQueue: true,
      maxRetriesPerRequest: 0,
      readOnly: false,
      lazyConnect: false,
      connectTimeout: Math.max(this.context.connectTimeoutMs, 1_000),
    });
    let lastError: unknown;
    conn.on('error', (err: unknown) => {
      lastError = err;
    });
    conn.on('smessage', (channel: string, message: string) => this.handler(channel, message));
    conn.on('close', () =>
      this.drop(node, conn, lastError ?? new Error(`subscriber connection to Cluster node ${node} closed`), true),
    );
    conn.on('moved', () =>
      this.drop(node, conn, new Error(`a slot with wake-up subscriptions moved away from Cluster node ${node}`), false),
    );
    this.nodes.set(node, conn);
    return conn;
  }

  /** The channels on `node` are no longer (all) subscribed: report it and subscribe them where their slots are now. */
  private drop(node: string, conn: Redis, error: unknown, closed: boolean): void {
    if (this.closed || this.nodes.get(node) !== conn) return;
    if (closed) this.nodes.delete(node);
    let affected = false;
    for (const [channel, at] of this.routes) {
      if (at !== node) continue;
      this.routes.delete(channel);
      affected = true;
    }
    if (!affected) return;
    if (this.downSince === undefined) {
      this.downSince = performance.now();
      this.context.report({ connection: 'subscriber', state: 'lost', error });
    }
    this.kick();
  }

  /** Runs the re-subscription loop unless it runs already (then it takes one more pass). */
  private kick(): void {
    this.dirty = true;
    if (this.rerouting || this.closed) return;
    this.rerouting = this.reroute().finally(() => {
      this.rerouting = undefined;
    });
  }

  private async reroute(): Promise<void> {
    for (;;) {
      if (this.closed) return;
      if (!this.dirty && !this.anyMissing()) break;
      this.dirty = false;
      if (!(await this.rerouteOnce())) {
        await new Promise<void>((resolve) => {
          this.wakeRetry = resolve;
          this.retryTimer = setTimeout(resolve, REROUTE_RETRY_MS);
          this.retryTimer.unref();
        });
      }
    }
    if (this.downSince === undefined) return;
    const downMs = performance.now() - this.downSince;
    this.downSince = undefined;
    this.context.report({ connection: 'subscriber', state: 'restored', downMs });
  }

  private anyMissing(): boolean {
    for (const channel of this.wanted) if (!this.routes.has(channel)) return true;
    return false;
  }

  /** One pass: every wanted channel not subscribed is subscribed on its slot's master. `false` if any failed. */
  private async rerouteOnce(): Promise<boolean> {
    const missing = [...this.wanted].filter((c) => !this.routes.has(c));
    if (missing.length === 0) return true;
    await this.refreshSlots();
    const results = await Promise.allSettled(
      missing.map(async (channel) => {
        const node = this.masterFor(channel);
        if (node === undefined) throw new Error(`no master serves the slot of "${channel}"`);
        await this.subscribeOn(channel, node, 0);
        if (this.wanted.has(channel) && !this.routes.has(channel))
          throw new Error(`"${channel}" is not subscribed yet`);
      }),
    );
    return results.every((r) => r.status === 'fulfilled');
  }
}
