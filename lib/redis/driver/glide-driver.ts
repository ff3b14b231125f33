import type { GlideClientLike } from './client-family.js';
import { outageReporter } from './connection-watch.js';
import { glideError, isGlideConnectionFailure } from './glide-errors.js';
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

type Route =
  | { readonly type: 'routeByAddress'; readonly host: string; readonly port: number }
  | { readonly type: 'primarySlotKey'; readonly key: string }
  | undefined;

/** The members of a GLIDE client the driver calls. */
interface GlideAny extends GlideClientLike {
  customCommand(args: string[], options?: { route?: unknown }): Promise<unknown>;
  subscribe?(channels: Set<string>, timeoutMs: number): Promise<void>;
  unsubscribe?(channels: Set<string>, timeoutMs: number): Promise<void>;
  ssubscribe?(channels: Set<string>, timeoutMs: number): Promise<void>;
  sunsubscribe?(channels: Set<string>, timeoutMs: number): Promise<void>;
}

interface GlideClass {
  createClient(config: object): Promise<GlideAny>;
}

/**
 * The driver for Valkey GLIDE (`GlideClient`, `GlideClusterClient`): every command is a `customCommand`, routed by
 * GLIDE from its keys on a Cluster (a keyless one sent to each master by address where it must reach them all).
 * GLIDE reports no connection events: the connection counts as down after a call failed for want of a connection,
 * and up again after the next call that got an answer. Wake-ups go through a subscriber client of the same class
 * and configuration, created by the driver (GLIDE delivers messages to a callback given at creation) and closed by
 * it; the application's client is never closed.
 */
export class GlideDriver implements RedisDriver {
  readonly client = 'Valkey GLIDE';
  readonly owned = false;
  readonly keyPrefix = '';
  readonly cluster: boolean;
  private readonly c: GlideAny;
  private up = true;
  private readonly listeners = new Set<(event: ConnectionEvent) => void>();
  /** On a Cluster: the master of each slot, from `CLUSTER SLOTS` (empty until loaded). */
  private slots: string[] = [];
  private loading: Promise<void> | undefined;

  constructor(
    input: GlideClientLike,
    private readonly tuning: ConnectionTuning,
  ) {
    this.c = input;
    this.cluster = typeof this.c.ssubscribe === 'function' || /Cluster/.test(this.c.constructor.name);
    if (this.cluster) void this.loadSlots();
  }

  get connected(): boolean {
    return this.up;
  }

  /** GLIDE's `requestTimeout` (its default: 250 ms), from the client or the configuration it was created with. */
  get clientTimeout(): { readonly ms: number; readonly name: string; readonly setting: string } | undefined {
    const c = this.c as { requestTimeout?: unknown; config?: { requestTimeout?: unknown } };
    const ms = typeof c.requestTimeout === 'number' ? c.requestTimeout : (c.config?.requestTimeout ?? 250);
    if (typeof ms !== 'number') return undefined;
    return { ms, name: 'requestTimeout', setting: 'requestTimeout in the GLIDE client configuration' };
  }

  evalsha(sha: string, keys: readonly string[], args: readonly CommandArg[]): Promise<unknown> {
    return this.send(['EVALSHA', sha, keys.length, ...keys, ...args]);
  }

  eval(source: string, keys: readonly string[], args: readonly CommandArg[]): Promise<unknown> {
    return this.send(['EVAL', source, keys.length, ...keys, ...args]);
  }

  send(args: readonly CommandArg[], key?: string): Promise<unknown> {
    const route = key === undefined ? undefined : this.routeOf(key);
    return this.call(args, route);
  }

  /**
   * One after another on the connection of `key`'s master (GLIDE keeps one multiplexed connection per node): a
   * `WAIT` sent after a script's reply counts that script's writes. One round trip per command.
   */
  async pipeline(commands: readonly (readonly CommandArg[])[], key?: string): Promise<PipelineReply[]> {
    const route = key === undefined ? undefined : this.routeOf(key);
    const out: PipelineReply[] = [];
    for (const command of commands) {
      const routed = command[0] === 'EVALSHA' || command[0] === 'EVAL' ? undefined : route;
      try {
        out.push([null, await this.call(command, routed)]);
      } catch (err) {
        if (isGlideConnectionFailure(err) || !(err instanceof Error)) throw err;
        out.push([err, undefined]);
      }
    }
    return out;
  }

  masters(): readonly DriverNode[] {
    if (!this.cluster) {
      const first = (this.c as { config?: { addresses?: { host?: string; port?: number }[] } }).config?.addresses?.[0];
      const label = first ? `${first.host ?? 'localhost'}:${first.port ?? 6379}` : 'the Valkey GLIDE client';
      return [{ label, send: (args) => this.call(args, undefined) }];
    }
    return [...new Set(this.slots.filter((s) => s !== undefined))].map((address) => ({
      label: address,
      send: (args: readonly CommandArg[]) => this.call(args, routeTo(address)),
    }));
  }

  async whenReady(timeoutMs: number): Promise<boolean> {
    if (!this.cluster) return true;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.loadSlots(), new Promise((r) => (timer = setTimeout(r, timeoutMs).unref()))]);
    clearTimeout(timer);
    return this.slots.length > 0;
  }

  masterOfSlot(slot: number): string | undefined {
    return this.slots[slot];
  }

  async refreshSlots(timeoutMs: number): Promise<void> {
    if (!this.cluster) return;
    this.loading = undefined;
    await this.whenReady(timeoutMs);
  }

  onConnection(listener: (event: ConnectionEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  channels(context: ChannelsContext): DriverChannels {
    return new GlideChannels(this.c, this.cluster, context, this.tuning.commandTimeoutMs);
  }

  async close(): Promise<void> {
    // The application's client: left open.
  }

  private async call(args: readonly CommandArg[], route: Route): Promise<unknown> {
    try {
      const reply = await this.c.customCommand(args.map(String), route ? { route } : undefined);
      this.mark(true);
      return reply;
    } catch (err) {
      if (isGlideConnectionFailure(err)) this.mark(false, err);
      else this.mark(true);
      throw glideError(err);
    }
  }

  private mark(up: boolean, error?: unknown): void {
    if (up === this.up) return;
    this.up = up;
    const event: ConnectionEvent = up ? { state: 'up' } : { state: 'down', error };
    for (const listener of [...this.listeners]) listener(event);
  }

  private routeOf(key: string): Route {
    // GLIDE routes a command with keys by itself; a keyless one sent for `key` goes to that key's master.
    if (!this.cluster) return undefined;
    return { type: 'primarySlotKey', key };
  }

  private loadSlots(): Promise<void> {
    this.loading ??= this.call(['CLUSTER', 'SLOTS'], undefined)
      .then((reply) => {
        const slots: string[] = [];
        for (const range of reply as [number, number, [string, number]][]) {
          const address = `${range[2][0]}:${range[2][1]}`;
          for (let s = Number(range[0]); s <= Number(range[1]); s++) slots[s] = address;
        }
        this.slots = slots;
      })
      .catch(() => {
        this.loading = undefined;
      });
    return this.loading;
  }
}

function routeTo(address: string): Route {
  const at = address.lastIndexOf(':');
  return { type: 'routeByAddress', host: address.slice(0, at), port: Number(address.slice(at + 1)) };
}

/**
 * Wake-ups over a GLIDE client of the driver's own (same class and configuration as the application's, with a
 * message callback): `SUBSCRIBE`, or `SSUBSCRIBE` on a Cluster, where GLIDE keeps each sharded subscription on the
 * master of its slot, also after the slot moves or the connection is re-established.
 */
class GlideChannels implements DriverChannels {
  private sub: Promise<GlideAny> | undefined;
  private handler: (channel: string, message: string) => void = () => undefined;
  private up = true;
  private readonly report: (event: ConnectionEvent) => void;
  private closed = false;

  constructor(
    private readonly app: GlideAny,
    private readonly cluster: boolean,
    context: ChannelsContext,
    private readonly timeoutMs: number,
  ) {
    this.report = outageReporter('subscriber', context.report);
  }

  get connected(): boolean {
    return this.up;
  }

  onMessage(handler: (channel: string, message: string) => void): void {
    this.handler = handler;
  }

  isSubscribed(): boolean {
    return true;
  }

  async subscribe(channel: string): Promise<void> {
    const sub = await this.client();
    await this.watched(
      this.cluster
        ? (sub.ssubscribe as NonNullable<GlideAny['ssubscribe']>).call(sub, new Set([channel]), this.timeoutMs)
        : (sub.subscribe as NonNullable<GlideAny['subscribe']>).call(sub, new Set([channel]), this.timeoutMs),
    );
  }

  async unsubscribe(channel: string): Promise<void> {
    if (!this.sub || this.closed) return;
    const sub = await this.sub;
    await this.watched(
      this.cluster
        ? (sub.sunsubscribe as NonNullable<GlideAny['sunsubscribe']>).call(sub, new Set([channel]), this.timeoutMs)
        : (sub.unsubscribe as NonNullable<GlideAny['unsubscribe']>).call(sub, new Set([channel]), this.timeoutMs),
    );
  }

  async ping(): Promise<void> {
    const sub = this.sub ? await this.sub : this.app;
    await this.watched(sub.customCommand(['PING']));
  }

  async close(): Promise<void> {
    this.closed = true;
    const sub = await this.sub?.catch(() => undefined);
    try {
      sub?.close();
    } catch {
      // Closed already.
    }
  }

  private client(): Promise<GlideAny> {
    if (!this.sub) {
      const config = (this.app as unknown as { config?: object }).config ?? {};
      const created = (this.app.constructor as unknown as GlideClass).createClient({
        ...config,
        pubsubSubscriptions: {
          channelsAndPatterns: {},
          callback: (msg: { channel: unknown; message: unknown }) =>
            this.handler(String(msg.channel), String(msg.message)),
        },
      });
      created.catch(() => {
        if (this.sub === created) this.sub = undefined;
      });
      this.sub = created;
    }
    return this.sub;
  }

  private async watched<T>(call: Promise<T>): Promise<T> {
    try {
      const out = await call;
      this.mark(true);
      return out;
    } catch (err) {
      if (isGlideConnectionFailure(err)) this.mark(false, err);
      throw glideError(err);
    }
  }

  private mark(up: boolean, error?: unknown): void {
    if (up === this.up) return;
    this.up = up;
    this.report(up ? { state: 'up' } : { state: 'down', error });
  }
}
