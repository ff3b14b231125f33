// A TCP proxy on loopback in front of a real redis-server, for faults that hit one connection of a client and not
// its others: what a connection sends can be held back from the first chunk that matches a pattern (e.g. the
// wake-up connection's SUBSCRIBE, or one script's EVALSHA), as a slow or congested network path would, then let
// through in order. Nothing is rewritten or answered by the proxy: Redis sees every byte, later.
import { connect, createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { HOST } from './redis-nodes.js';

/** Traffic held back by `RedisProxy.holdWhen`. */
export interface HeldTraffic {
  /** Resolves once a connection sent a chunk that matched (it is being held from that chunk on). */
  readonly matched: Promise<void>;
  /** Lets what this hold kept back through, in order, and stops holding. */
  release(): void;
  /** Holds no further connection; those it holds stay held until `release`. */
  stopMatching(): void;
}

/** A hold in force: its pattern, the callback of its first match, and the connections it holds. */
interface Hold {
  readonly pattern: RegExp;
  readonly matched: () => void;
}

/** One client connection through the proxy. */
interface Piped {
  readonly client: Socket;
  readonly server: Socket;
  /** The hold keeping this connection's chunks back, and the chunks kept; `undefined` while passing. */
  held: { readonly by: Hold; readonly chunks: Buffer[] } | undefined;
}

export class RedisProxy {
  private readonly piped = new Set<Piped>();
  private readonly holds = new Set<Hold>();
  private refusing = false;

  private constructor(
    private readonly server: Server,
    private readonly targetPort: number,
  ) {
    server.on('connection', (client) => this.pipe(client));
  }

  /** A proxy to the redis-server at `targetUrl` (`redis://host:port`), listening on a free loopback port. */
  static async start(targetUrl: string): Promise<RedisProxy> {
    const target = new URL(targetUrl);
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, HOST, () => resolve());
    });
    return new RedisProxy(server, Number(target.port || 6379));
  }

  /** The URL clients connect to. */
  get url(): string {
    return `redis://${HOST}:${(this.server.address() as AddressInfo).port}`;
  }

  /**
   * From the first chunk a connection sends that matches `pattern` (read as latin1, e.g. `/subscribe/i`), everything
   * that connection sends is held back until the hold is released. Every connection that matches is held.
   */
  holdWhen(pattern: RegExp): HeldTraffic {
    let matched!: () => void;
    const first = new Promise<void>((resolve) => (matched = resolve));
    const hold: Hold = { pattern, matched };
    this.holds.add(hold);
    return { matched: first, release: () => this.releaseHold(hold), stopMatching: () => this.holds.delete(hold) };
  }

  /** The local ports of the proxy's connections to Redis (as `CLIENT LIST` shows them in `addr`). */
  upstreamPorts(): Set<number> {
    return new Set([...this.piped].map((p) => p.server.localPort).filter((port): port is number => port !== undefined));
  }

  /** Lets everything held through, in order, and stops holding. */
  release(): void {
    for (const hold of [...this.holds]) this.releaseHold(hold);
  }

  /**
   * Cuts every connection through the proxy (both sockets destroyed: the client sees its connection close, as after
   * a network reset). With `refuse`, connections made afterwards are cut at once too, until `heal()`.
   */
  cut({ refuse = false }: { readonly refuse?: boolean } = {}): void {
    this.refusing = refuse;
    for (const p of [...this.piped]) {
      p.client.destroy();
      p.server.destroy();
    }
    this.piped.clear();
  }

  /** Lets new connections through again after `cut({ refuse: true })`. */
  heal(): void {
    this.refusing = false;
  }

  /** Closes every connection and stops listening. */
  async close(): Promise<void> {
    this.holds.clear();
    for (const p of this.piped) {
      p.client.destroy();
      p.server.destroy();
    }
    this.piped.clear();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private releaseHold(hold: Hold): void {
    this.holds.delete(hold);
    for (const p of this.piped) {
      if (p.held?.by !== hold) continue;
      const { chunks } = p.held;
      p.held = undefined;
      for (const chunk of chunks) p.server.write(chunk);
    }
  }

  private pipe(client: Socket): void {
    if (this.refusing) {
      client.destroy();
      return;
    }
    const server = connect(this.targetPort, HOST);
    const p: Piped = { client, server, held: undefined };
    this.piped.add(p);
    const end = () => {
      this.piped.delete(p);
      client.destroy();
      server.destroy();
    };
    client.on('error', end).on('close', end);
    server.on('error', end).on('close', end);
    server.on('data', (chunk) => client.write(chunk));
    client.on('data', (chunk: Buffer) => {
      if (!p.held) {
        const text = chunk.toString('latin1');
        const hold = [...this.holds].find((h) => h.pattern.test(text));
        if (hold) {
          p.held = { by: hold, chunks: [] };
          hold.matched();
        }
      }
      if (p.held) p.held.chunks.push(chunk);
      else server.write(chunk);
    });
  }
}
