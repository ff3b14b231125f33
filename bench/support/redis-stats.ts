import { Redis } from 'ioredis';

/** Connection housekeeping and the bench's own measuring commands: never counted as lock work. */
const HOUSEKEEPING = new Set([
  'echo',
  'info',
  'config',
  'monitor',
  'client',
  'hello',
  'select',
  'command',
  'ping',
  'script',
  'flushall',
]);

/** Calls per command (lower-case, subcommands folded into their command). */
export type CommandCounts = Record<string, number>;

export function isHousekeeping(command: string): boolean {
  return HOUSEKEEPING.has(command.toLowerCase().split('|')[0]);
}

export function totalOf(counts: CommandCounts): number {
  return Object.values(counts).reduce((a, b) => a + b, 0);
}

/** Divides every count by `by`, rounded to 2 decimals, largest first. */
export function perUnit(counts: CommandCounts, by: number): CommandCounts {
  return Object.fromEntries(
    Object.entries(counts)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => [k, Math.round((v / by) * 100) / 100]),
  );
}

/** A separate connection to read and reset the server's statistics. */
export class RedisStats {
  readonly admin: Redis;

  constructor(url: string) {
    this.admin = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1 });
  }

  /** `CONFIG RESETSTAT`: zeroes INFO commandstats. */
  async reset(): Promise<void> {
    await this.admin.config('RESETSTAT');
  }

  /**
   * Calls per command from `INFO commandstats` since the last reset, housekeeping excluded. Commands that
   * scripts run (`redis.call`) are counted too, under their own names, as Redis counts them.
   */
  async commandCounts(): Promise<{ calls: CommandCounts; usec: CommandCounts }> {
    const text = await this.admin.info('commandstats');
    const calls: CommandCounts = {};
    const usec: CommandCounts = {};
    for (const line of text.split('\n')) {
      const m = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line.trim());
      if (!m) continue;
      const name = m[1].split('|')[0].toLowerCase();
      if (isHousekeeping(name)) continue;
      calls[name] = (calls[name] ?? 0) + Number(m[2]);
      usec[name] = (usec[name] ?? 0) + Number(m[3]);
    }
    return { calls, usec };
  }

  /** CPU seconds the server has used (user + system, all threads), from `INFO cpu`. */
  async cpuSeconds(): Promise<number> {
    const text = await this.admin.info('cpu');
    const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(text)?.[1] ?? 0);
    return field('used_cpu_user') + field('used_cpu_sys');
  }

  async serverVersion(): Promise<string> {
    const text = await this.admin.info('server');
    return /^redis_version:(\S+)/m.exec(text)?.[1] ?? 'unknown';
  }

  async flush(): Promise<void> {
    await this.admin.flushall();
  }

  async close(): Promise<void> {
    await this.admin.quit().catch(() => this.admin.disconnect());
  }
}

/**
 * Counts the commands that clients send over the wire (round trips issued), separately from those that scripts
 * run inside Redis, using `MONITOR` (which tags script-run commands with the source "lua"). For counting only:
 * MONITOR slows the server down, so no timing is taken while it runs.
 */
export class CommandMonitor {
  private readonly wire: CommandCounts = {};
  private readonly script: CommandCounts = {};
  private connection: Redis | undefined;

  private constructor(private readonly url: string) {}

  static async start(url: string): Promise<CommandMonitor> {
    const m = new CommandMonitor(url);
    const source = new Redis(m.url);
    const monitor = await source.monitor();
    source.disconnect();
    m.connection = monitor;
    monitor.on('monitor', (_time: string, args: string[], origin: string) => {
      const name = String(args[0] ?? '').toLowerCase();
      if (isHousekeeping(name)) return;
      const into = origin === 'lua' ? m.script : m.wire;
      into[name] = (into[name] ?? 0) + 1;
    });
    // MONITOR replies reach us asynchronously: a marker command tells when everything before it was seen.
    return m;
  }

  /** Waits until every command sent before this call has been reported, then stops monitoring. */
  async stop(marker: Redis): Promise<{ wire: CommandCounts; script: CommandCounts }> {
    const conn = this.connection!;
    const tag = `bench-marker-${Math.random().toString(36).slice(2)}`;
    await new Promise<void>((resolve) => {
      conn.on('monitor', (_t: string, args: string[]) => {
        if (String(args[0]).toLowerCase() === 'echo' && args[1] === tag) resolve();
      });
      void marker.echo(tag);
    });
    conn.disconnect();
    delete this.wire.echo;
    return { wire: { ...this.wire }, script: { ...this.script } };
  }
}
