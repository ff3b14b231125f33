// A TCP proxy on loopback in front of a real redis-server, for faults that hit one connection of a client and not
// its others: what a connection sends can be held back from the first chunk that matches a pattern (e.g. the
// wake-up connection's SUBSCRIBE), as a slow or congested network path would, then let through in order. Nothing is
// rewritten or answered by the proxy: Redis sees every byte, later.
import { connect, createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { HOST } from './redis-nodes.js';

/** One client connection through the proxy. */
interface Piped {
  readonly client: Socket;
  readonly server: Socket;
  /** Chunks from the client held back since the hold started on this connection; `undefined` while passing. */
  held: Buffer[] | undefined;
}

/** A hold in force: the pattern, and the promise callback to call on its first match. */
interface Hold {
  readonly pattern: RegExp;
  readonly matched: () => void;
}

export class RedisProxy {
  private readonly piped = new Set<Piped>();
  private hold: Hold | undefined;

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
   * From the first chunk a client sends that matches `pattern` (read as latin1, e.g. `/subscribe/i`), everything that
   * connection sends is held back until `release()`. Resolves once a chunk matched, i.e. is being held.
   */
  holdWhen(pattern: RegExp): Promise<void> {
    return new Promise((matched) => {
      this.hold = { pattern, matched };
    });
  }

  /** Lets every held chunk through, in order, and stops holding. */
  release(): void {
    this.hold = undefined;
    for (const p of this.piped) {
      const held = p.held;
      p.held = undefined;
      for (const chunk of held ?? []) p.server.write(chunk);
    }
  }

  /** Closes every connection and stops listening. */
  async close(): Promise<void> {
    this.hold = undefined;
    for (const p of this.piped) {
      p.client.destroy();
      p.server.destroy();
    }
    this.piped.clear();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private pipe(client: Socket): void {
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
      const hold = this.hold;
      if (!p.held && hold?.pattern.test(chunk.toString('latin1'))) {
        p.held = [];
        hold.matched();
      }
      if (p.held) p.held.push(chunk);
      else server.write(chunk);
    });
  }
}
