import { Cluster, Redis } from 'ioredis';
import { LockConfigError } from '../../errors/lock-config.error.js';

/**
 * Checks the masters of quorum mode before any connection is opened, and returns a label (`host:port`) for each.
 * @throws {LockConfigError} naming `redis`: fewer than 3, an even count, a Cluster, an invalid entry, or one master
 * given twice.
 */
export function validateQuorumInputs(inputs: readonly unknown[]): string[] {
  const fix = 'pass 3, 5 or 7 independent masters (redis:// URLs, ioredis RedisOptions or Redis clients)';
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
    if (input instanceof Cluster) {
      throw new LockConfigError(
        `invalid redis: entry ${i} is an ioredis Cluster; quorum mode takes independent masters, not a Cluster: ${fix}`,
        'redis',
      );
    }
    const label = addressOf(input);
    if (label === undefined)
      throw new LockConfigError(
        `invalid redis: entry ${i} is not a redis:// URL, ioredis RedisOptions or Redis client; ${fix}`,
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
  const options = input instanceof Redis ? input.options : input;
  if (typeof options !== 'object' || options === null) return undefined;
  const o = options as { host?: string; port?: number; path?: string; name?: string; sentinels?: unknown };
  if (o.path) return o.path;
  if (o.sentinels) return `sentinel master ${o.name ?? ''}`;
  return address(o.host, o.port);
}
