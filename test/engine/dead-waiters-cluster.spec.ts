import { afterAll, beforeAll, describe } from '@jest/globals';
import { RedisCluster, topologySupport } from '../support/topologies.js';
import { kit, liveness } from './dead-waiters.suite.js';
import type { World } from './dead-waiters.suite.js';

// Liveness on a Cluster is part of what the library promises: a redis-server that cannot run one fails these tests
// (saying why) rather than skipping them.
const unsupported = await topologySupport();

describe('dead and frozen waiters, Redis Cluster', () => {
  let cluster: RedisCluster | undefined;
  let nodes: { host: string; port: number }[] = [];
  beforeAll(async () => {
    if (unsupported) throw new Error(`a Redis Cluster is needed for these tests: ${unsupported}`);
    cluster = await RedisCluster.start();
    nodes = (await cluster.masters()).map((n) => ({ host: n.host, port: n.port }));
  }, 30_000);
  afterAll(() => cluster?.dispose());

  const world = (): World => {
    const c = cluster as RedisCluster;
    return {
      name: 'cluster',
      engine: (prefix, options) => {
        const client = c.client();
        kit.add(() => c.close(client));
        return kit.engine({ redis: client, keyPrefix: prefix, ...options });
      },
      workerRedis: { cluster: nodes },
      keysLeft: (prefix) => c.keysUnder(prefix),
    };
  };
  liveness(world, 2);
});
