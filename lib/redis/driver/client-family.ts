/**
 * The shape of a node-redis v5 or v6 client the library uses (`createClient`, `createCluster`, `createSentinel`): only the
 * members it calls, so no node-redis types are needed to compile against it.
 */
export interface NodeRedisLike {
  readonly isOpen: boolean;
  readonly isReady?: boolean;
  connect(): Promise<unknown>;
  sendCommand(...args: never[]): Promise<unknown>;
}

/**
 * The shape of an iovalkey `Redis` or `Cluster` (a fork of ioredis with the same API, whose classes TypeScript does not
 * take for ioredis'), or of another copy of ioredis: only the members the library checks for.
 */
export interface IovalkeyLike {
  readonly status: string;
  readonly isCluster: boolean;
  duplicate(...args: never[]): unknown;
  evalsha(...args: never[]): Promise<unknown>;
  pipeline(...args: never[]): unknown;
  sendCommand(...args: never[]): unknown;
}

/** The shape of a Valkey GLIDE client the library uses (`GlideClient`, `GlideClusterClient`). */
export interface GlideClientLike {
  customCommand(args: string[], options?: never): Promise<unknown>;
  close(errorMessage?: string): void;
}

/** Which client library `input` belongs to, by its shape; `undefined` for anything else (options, or unknown). */
export function clientFamily(input: object): 'ioredis' | 'node-redis' | 'glide' | undefined {
  const c = input as Record<string, unknown>;
  const has = (name: string) => typeof c[name] === 'function';
  if (has('customCommand') && has('close') && !has('sendCommand')) return 'glide';
  if (
    has('sendCommand') &&
    has('duplicate') &&
    has('evalsha') &&
    has('pipeline') &&
    typeof c.status === 'string' &&
    typeof c.isCluster === 'boolean'
  ) {
    return 'ioredis';
  }
  if (has('sendCommand') && 'isOpen' in c && has('connect')) return 'node-redis';
  return undefined;
}
