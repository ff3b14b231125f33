import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { Cluster, Redis } from 'ioredis';
import type { RedisOptions } from 'ioredis';
import { LockEngine } from '../locking/engine/lock-engine.js';
import { BOARD_KINDS } from '../read-model/kinds.js';
import { BoardSnapshots } from '../read-model/snapshots.js';
import { bounded } from '../common/async-limits.js';
import type { CliOptions } from './cli-args.js';
import { UsageError } from './cli-args.js';
import { notRedisAnswer, probeNotRedis } from './protocol-probe.js';

/** What the commands work with. */
export interface CliSession {
  readonly engine: LockEngine;
  readonly snapshots: BoardSnapshots;
  /** Where it is connected, without credentials (`host:port`, comma-separated). */
  readonly where: string;
  close(): Promise<void>;
}

/** A failure to report as one line: exit code 1. */
export class CliError extends Error {
  override readonly name = 'CliError';
}

/**
 * ioredis options for `url` (credentials, TLS with `rediss://` or `--tls-ca`, database), tuned for a short-lived tool.
 */
export function optionsFromUrl(url: string, tlsCa: string | undefined, timeoutMs: number): RedisOptions {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new UsageError(`--url ${JSON.stringify(redact(url))} is not a valid URL`);
  }
  const db = u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0;
  if (!Number.isInteger(db) || db < 0)
    throw new UsageError(`--url ${JSON.stringify(redact(url))}: the database must be a number`);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  const tls =
    u.protocol === 'rediss:' || tlsCa !== undefined
      ? { ...(tlsCa ? { ca: readCa(tlsCa) } : {}), ...(isIP(host) ? {} : { servername: host }) }
      : undefined;
  return {
    host,
    port: u.port ? Number(u.port) : 6379,
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(db ? { db } : {}),
    ...(tls ? { tls } : {}),
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 1,
    // Keep trying while `watch` runs (each call is bounded anyway); a short-lived command exits before it matters.
    retryStrategy: (attempt: number) => Math.min(attempt * 200, 2_000),
    lazyConnect: true,
  };
}

function readCa(file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new UsageError(`--tls-ca ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

/** `url` without its password. */
export function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}

/** Opens the connection(s), checks that Redis answers (bounded), and makes the engine and the snapshot source. */
export async function openSession(options: CliOptions): Promise<CliSession> {
  const nodes = options.urls.map((url) => optionsFromUrl(url, options.tlsCa, options.timeoutMs));
  const where = nodes.map((n) => `${n.host}:${n.port}`).join(', ');
  const quiet = { warn: () => undefined, error: () => undefined };
  let client: Redis | Cluster | undefined;
  let engine: LockEngine;
  if (options.topology === 'quorum') {
    engine = new LockEngine({
      redis: nodes,
      keyPrefix: options.keyPrefix,
      commandTimeoutMs: options.timeoutMs,
      holdWarningMs: 0,
      waitWarningMs: 0,
      logger: quiet,
    });
    const ping = await engine.ping(options.timeoutMs);
    if (!ping.command) {
      await engine.close();
      const why = ping.error ?? 'no answer';
      throw new CliError(
        deniedMessage(String(why), `the quorum masters ${where}`) ?? `cannot reach the quorum masters ${where}: ${why}`,
      );
    }
  } else {
    client = await connect(nodes, options.topology === 'cluster', options.timeoutMs, where);
    // A node of a Redis Cluster given without --cluster: its INFO says so, and every master is then scanned.
    if (
      !(client instanceof Cluster) &&
      /^cluster_enabled:1\s*$/m.test(await bounded(client.info('cluster'), options.timeoutMs, 'INFO').catch(() => ''))
    ) {
      client.disconnect();
      client = await connect(nodes, true, options.timeoutMs, where);
    }
    engine = new LockEngine({
      redis: client,
      keyPrefix: options.keyPrefix,
      commandTimeoutMs: options.timeoutMs,
      holdWarningMs: 0,
      waitWarningMs: 0,
      logger: quiet,
    });
  }
  const snapshots = new BoardSnapshots(engine, {
    // Each listing of the tool is its own snapshot (watch asks once per interval).
    refreshMs: 1,
    maxKeys: options.maxKeys,
    scanCount: 1_000,
    scanBudgetMs: Math.max(options.timeoutMs, 1_000),
    holdWarningMs: options.holdWarningMs,
    waitWarningMs: options.waitWarningMs,
    kinds: BOARD_KINDS,
  });
  return {
    engine,
    snapshots,
    where,
    async close() {
      await engine.close();
      if (client) {
        await bounded(client.quit(), options.timeoutMs, 'QUIT').catch(() => undefined);
        client.disconnect();
      }
    },
  };
}

/** A connected client (a Cluster client when `cluster`), or a `CliError` naming what the connection said. */
async function connect(
  nodes: readonly RedisOptions[],
  cluster: boolean,
  timeoutMs: number,
  where: string,
): Promise<Redis | Cluster> {
  const [first] = nodes;
  const { host: _host, port: _port, retryStrategy: _retry, lazyConnect: _lazy, ...shared } = first;
  const client = cluster
    ? new Cluster(
        nodes.map((n) => ({ host: n.host as string, port: n.port as number })),
        {
          lazyConnect: true,
          redisOptions: shared,
          clusterRetryStrategy: (attempt: number) => Math.min(attempt * 200, 2_000),
          slotsRefreshTimeout: timeoutMs,
          dnsLookup: (address, callback) => callback(null, address),
        },
      )
    : new Redis(first);
  let lastError: Error | undefined;
  let notRedis: string | undefined;
  const seen = (err: Error) => {
    lastError = err;
    notRedis ??= notRedisProtocol(nodeError(err) ?? err);
  };
  client.on('error', seen);
  // A Cluster client reports each node's own error apart from its "Failed to refresh slots cache".
  client.on('node error', seen);
  try {
    await bounded(client.connect(), timeoutMs, 'connecting');
    await bounded(client.ping(), timeoutMs, 'PING');
  } catch (err) {
    client.disconnect();
    // The connection's own error (ECONNREFUSED, a TLS or AUTH failure) says more than the command's.
    const cause = nodeError(lastError) ?? nodeError(err as Error) ?? (err as Error);
    notRedis ??= notRedisProtocol(cause);
    // The client's parser saw one character at most, and a Cluster client or a connection the other end closed does
    // not always say why: ask each node once, and show what it answers.
    if (!first.tls) {
      const answers = await Promise.all(
        nodes.map((n) => probeNotRedis(n.host as string, n.port as number, Math.min(timeoutMs, 1_000))),
      );
      notRedis = answers.find((a) => a !== undefined) ?? notRedis;
    }
    if (notRedis) throw new CliError(`${where} does not speak the Redis protocol: ${notRedis}`);
    const denied = deniedMessage(cause.message, `Redis ${cluster ? 'Cluster ' : ''}at ${where}`);
    throw new CliError(denied ?? `cannot reach Redis ${cluster ? 'Cluster ' : ''}at ${where}: ${cause.message}`);
  }
  return client;
}

/**
 * For a refusal of the Redis user's ACL (NOPERM: the server answered, it is not out of reach): `<who> refused:
 * permission denied (NOPERM …)`, with the rule to look for; `undefined` for any other error.
 */
export function deniedMessage(error: string, who: string): string | undefined {
  const noperm = /\bNOPERM\b[^;]*/.exec(error)?.[0]?.trim();
  if (!noperm) return undefined;
  return `${who} refused: permission denied (${noperm}); grant the Redis user the command (ACL SETUSER <user> +<command>)`;
}

/** The error of the last node a Cluster client tried, when `err` is the client's summary of them; else `err`. */
function nodeError(err: Error | undefined): Error | undefined {
  const last = (err as { lastNodeError?: unknown } | undefined)?.lastNodeError;
  return last instanceof Error ? last : err;
}

/**
 * What the client's parser says when the other end is not a Redis server ("Unknown RESP type 72 "H". Please report
 * this."), as a person can act on it; `undefined` for any other error.
 */
export function notRedisProtocol(err: Error): string | undefined {
  const match = /Unknown RESP type \d+ "(.*)"/s.exec(err.message);
  return match ? notRedisAnswer(match[1]) : undefined;
}
