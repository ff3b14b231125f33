import type { Cluster, Redis } from 'ioredis';
import type { LuaScript } from './lua-scripts.js';

/** A connection the library sends commands on: a standalone client or a Cluster client. */
export type RedisClient = Redis | Cluster;

/**
 * Runs `script` by SHA, loading it on the server when Redis answers NOSCRIPT (first use, or after a restart
 * or `SCRIPT FLUSH`). The one typed entry point for every script call.
 */
export async function runScript(
  client: RedisClient,
  script: LuaScript,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<unknown> {
  try {
    return await client.evalsha(script.sha, keys.length, ...keys, ...args);
  } catch (err) {
    if (err instanceof Error && err.message.startsWith('NOSCRIPT')) {
      return client.eval(script.source, keys.length, ...keys, ...args);
    }
    throw err;
  }
}
