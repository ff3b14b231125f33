import { GlideClient, GlideClusterClient, Logger } from '@valkey/valkey-glide';
import { Cluster as ValkeyCluster, Redis as Valkey } from 'iovalkey';
import { createClient, createCluster } from 'redis';
import { createClient as createClient6, createCluster as createCluster6 } from 'redis6';

/**
 * A client library the application may hand the library as `redis` (ioredis, the default, is not listed):
 * `node-redis` is node-redis 5 (RESP2), `node-redis6` node-redis 6 (RESP3 and a 5 s command timeout by default).
 */
export type DriverName = 'iovalkey' | 'node-redis' | 'node-redis6' | 'glide';

/** The client libraries with a driver besides ioredis, in the order the suites run them. */
export const DRIVERS: readonly DriverName[] = ['iovalkey', 'node-redis', 'node-redis6', 'glide'];

/** Where a client connects: a standalone server's URL, or a Cluster's nodes. */
export type DriverTarget = { readonly url: string } | { readonly cluster: readonly { host: string; port: number }[] };

/** An application's client of `name`, connected, and what closes it (the library never does). */
export interface DriverClient {
  readonly client: object;
  close(): Promise<void>;
}

// GLIDE's core logs every error reply at WARN on standard output; the tests provoke many on purpose.
let glideLogger = false;

/** How long a graceful close of a test's client may take, in milliseconds. */
const CLOSE_MS = 5_000;

/** Whether `p` settles (resolves or rejects) within `ms`. */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = p.then(
    () => true,
    () => true,
  );
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([settled, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Opens an application's client of `name` on `target`, as an application would (connected before use). */
export async function openDriverClient(name: DriverName, target: DriverTarget): Promise<DriverClient> {
  const cluster = 'cluster' in target ? target.cluster : undefined;
  const url = 'url' in target ? target.url : undefined;
  switch (name) {
    case 'iovalkey': {
      const client = cluster ? new ValkeyCluster(cluster.map((n) => ({ ...n }))) : new Valkey(url as string);
      client.on('error', () => undefined);
      return {
        client,
        close: async () => {
          if (
            !(await settlesWithin(
              client.quit().catch(() => client.disconnect()),
              CLOSE_MS,
            ))
          ) {
            console.warn(
              `iovalkey: quit() did not settle within ${CLOSE_MS} ms (a command left pending); disconnected`,
            );
            client.disconnect();
          }
        },
      };
    }
    case 'node-redis':
    case 'node-redis6': {
      const rootNodes = cluster?.map((n) => ({ url: `redis://${n.host}:${n.port}` }));
      const client =
        name === 'node-redis'
          ? rootNodes
            ? createCluster({ rootNodes })
            : createClient({ url })
          : rootNodes
            ? createCluster6({ rootNodes })
            : createClient6({ url });
      client.on('error', () => undefined);
      await client.connect();
      return {
        client,
        close: async () => {
          // A graceful close waits for every command still queued: bounded, so one that never settles is named (the
          // library must not leave one on an application's client) instead of hanging the test file's hooks.
          if (
            !(await settlesWithin(
              client.close().catch(() => client.destroy()),
              CLOSE_MS,
            ))
          ) {
            console.warn(`${name}: close() did not settle within ${CLOSE_MS} ms (a command left pending); destroyed`);
            client.destroy();
          }
        },
      };
    }
    case 'glide': {
      if (!glideLogger) {
        Logger.init('off');
        glideLogger = true;
      }
      const at = url === undefined ? undefined : new URL(url);
      const addresses = cluster ? [...cluster] : [{ host: at?.hostname ?? '', port: Number(at?.port) }];
      const credentials = at?.username ? { username: at.username, password: at.password } : undefined;
      const client = cluster
        ? await GlideClusterClient.createClient({ addresses, requestTimeout: 5_000 })
        : await GlideClient.createClient({ addresses, credentials, requestTimeout: 5_000 });
      return {
        client,
        close: async () => {
          client.close();
        },
      };
    }
  }
}
