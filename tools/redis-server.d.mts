export interface RedisServerProcess {
  readonly url: string;
  readonly port: number;
  readonly pid: number | undefined;
  stop(): Promise<void>;
  /** `stop()` without waiting, for a process `exit` listener: SIGKILL, then its folder is removed. */
  stopNow(): void;
  restart(): Promise<void>;
}
export function findRedisServer(): string | null;
export function ensureRedisServer(options?: { log?: (line: string) => void }): string;
export function freePort(): Promise<number>;
export function startRedisServer(options?: { port?: number; args?: string[] }): Promise<RedisServerProcess>;
