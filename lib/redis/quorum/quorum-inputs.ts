import { LockConfigError } from '../../errors/lock-config.error.js';
import { clientFamily } from '../driver/client-family.js';

/**
 * Checks the masters of quorum mode before any connection is opened, and returns a label (`host:port`) for each.
 * @throws {LockConfigError} naming `redis`: fewer than 3, an even count, a Cluster, an invalid entry, or one master
 * given twice.
 */
export function validateQuorumInputs(inputs: readonly unknown[]): string[] {
  const fix =
    'pass 3, 5 or 7 independent masters (redis:// URLs, ioredis RedisOptions, or standalone clients of ioredis, ' +
    'iovalkey, node-redis or Valkey GLIDE)';
  if (inputs.length < 3) {
    throw new LockConfigError(
      `invalid redis: quorum mode needs at least 3 masters, got ${inputs.length}; ${fix}, or a single connection input for one Redis`,
      'redis',
    );
  }
  if (inputs.length % 2 === 0) {
    throw new LockConfigError(
      `invalid redis: quorum mode needs an odd number of masters, got ${inputs.length} (an even count tolerates no more failures than one master less); ${fix}`,
      'redis',
    );
  }
  const labels = inputs.map((input, i) => {
    if (isClusterClient(input)) {
      throw new LockConfigError(
        `invalid redis: entry ${i} is a Cluster client; quorum mode takes independent masters, not a Cluster: ${fix}`,
        'redis',
      );
    }
    const label = addressOf(input);
    if (label === undefined)
      throw new LockConfigError(
        `invalid redis: entry ${i} is not a redis:// URL, ioredis RedisOptions or a client; ${fix}`,
        'redis',
      );
    return label;
  });
  labels.forEach((label, i) => {
    const j = labels.indexOf(label);
    if (j !== i) {
      throw new LockConfigError(
        `invalid redis: entries ${j} and ${i} are the same master (${label}); each entry must be a different, independent master: ${fix}`,
        'redis',
      );
    }
  });
  return labels;
}

/** `host:port` (or the socket path, or the Sentinel master name) of a connection input; `undefined` when invalid. */
function addressOf(input: unknown): string | undefined {
  const address = (host: string | undefined, port: number | string | undefined) => {
    const h = host === undefined || host === 'localhost' || host === '' ? '127.0.0.1' : host;
    return `${h}:${port === undefined || port === '' ? 6379 : Number(port)}`;
  };
  if (typeof input === 'string') {
    if (!/^rediss?:\/\//.test(input)) return undefined;
    try {
      const url = new URL(input);
      return address(url.hostname.replace(/^\[|\]$/g, ''), url.port);
    } catch {
      return undefined;
    }
  }
  const options = clientOptions(input);
  if (typeof options !== 'object' || options === null) return undefined;
  const o = options as { host?: string; port?: number; path?: string; name?: string; sentinels?: unknown };
  if (o.path) return o.path;
  if (o.sentinels) return `sentinel master ${o.name ?? ''}`;
  return address(o.host, o.port);
}

/** Whether `input` is a Cluster client of any supported library. */
function isClusterClient(input: unknown): boolean {
  if (typeof input !== 'object' || input === null) return false;
  const c = input as { isCluster?: unknown; masters?: unknown; ssubscribe?: unknown; nodeClient?: unknown };
  const family = clientFamily(input);
  if (family === 'ioredis') return c.isCluster === true;
  if (family === 'node-redis') return typeof c.nodeClient === 'function';
  if (family === 'glide') return typeof c.ssubscribe === 'function';
  return false;
}

/** The connection options of a client (host, port, path, Sentinel name), or `input` itself for options. */
function clientOptions(input: unknown): unknown {
  if (typeof input !== 'object' || input === null) return input;
  const c = input as {
    options?: { url?: string; socket?: { host?: string; port?: number; path?: string } };
    config?: { addresses?: { host?: string; port?: number }[] };
  };
  switch (clientFamily(input)) {
    case 'ioredis':
      return c.options;
    case 'node-redis': {
      const url = c.options?.url;
      if (url) {
        const at = new URL(url);
        return { host: at.hostname.replace(/^\[|\]$/g, ''), port: at.port === '' ? undefined : Number(at.port) };
      }
      return { host: c.options?.socket?.host, port: c.options?.socket?.port, path: c.options?.socket?.path };
    }
    case 'glide':
      return c.config?.addresses?.[0] ?? {};
    default:
      return input;
  }
}
