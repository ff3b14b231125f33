export interface RedisServerProcess {
  readonly url: string;
  readonly port: number;
  readonly pid: number | undefined;
  /** The server's temp folder (removed by `stop`). */
  readonly dir: string;
  stop(): Promise<void>;
  /** Kills the server and removes its folder at once (for a process `exit` handler). */
  stopSync(): void;
  restart(): Promise<void>;
}
export function findRedisServer(): string | null;
export function ensureRedisServer(options?: { log?: (line: string) => void }): string;
export function redisServerTlsSupport(): string | null;
export function freePort(): Promise<number>;
export function startRedisServer(options?: {
  port?: number;
  args?: string[];
  env?: Record<string, string>;
}): Promise<RedisServerProcess>;
