import { GlideClient, Logger } from '@valkey/valkey-glide';
import { Redis as Valkey } from 'iovalkey';
import { createClient } from 'redis';
import { LockEngine } from '../../lib/index.js';
import type { Contender, ContenderSpec } from './contender.js';

/**
 * This library's engine on an application's client of another library than ioredis (the `redis` option takes it as
 * it is): `acquire`, then `handle.release()`, defaults otherwise. Shows what each driver costs beside `engine`
 * (ioredis, opened from the URL).
 */
class DriverContender implements Contender {
  private constructor(
    private readonly engine: LockEngine,
    private readonly closeClient: () => Promise<void>,
  ) {}

  static async open(driver: 'iovalkey' | 'node-redis' | 'glide', url: string, prefix: string): Promise<Contender> {
    const { hostname, port } = new URL(url);
    let client: object;
    let close: () => Promise<void>;
    if (driver === 'iovalkey') {
      const valkey = new Valkey(url);
      client = valkey;
      close = async () => void (await valkey.quit());
    } else if (driver === 'node-redis') {
      const nodeRedis = createClient({ url });
      nodeRedis.on('error', () => undefined);
      await nodeRedis.connect();
      client = nodeRedis;
      close = async () => void (await nodeRedis.close());
    } else {
      Logger.init('error');
      const glide = await GlideClient.createClient({ addresses: [{ host: hostname, port: Number(port) }] });
      client = glide;
      close = async () => glide.close();
    }
    return new DriverContender(new LockEngine({ redis: client as never, keyPrefix: prefix }), close);
  }

  async withLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const handle = await this.engine.acquire(key);
    try {
      return await fn();
    } finally {
      await handle.release();
    }
  }

  async close(): Promise<void> {
    await this.engine.close();
    await this.closeClient();
  }
}

const settings = (client: string) => `LockEngine defaults on an application's ${client} client; acquire() + release()`;

export const iovalkeySpec: ContenderSpec = {
  id: 'engine-iovalkey',
  label: 'nest-redis-locks on iovalkey',
  kind: 'library',
  settings: settings('iovalkey 0.4'),
  create: (url, prefix) => DriverContender.open('iovalkey', url, prefix),
};

export const nodeRedisSpec: ContenderSpec = {
  id: 'engine-node-redis',
  label: 'nest-redis-locks on node-redis',
  kind: 'library',
  settings: settings('node-redis v5'),
  create: (url, prefix) => DriverContender.open('node-redis', url, prefix),
};

export const glideSpec: ContenderSpec = {
  id: 'engine-glide',
  label: 'nest-redis-locks on Valkey GLIDE',
  kind: 'library',
  settings: settings('Valkey GLIDE 2'),
  create: (url, prefix) => DriverContender.open('glide', url, prefix),
};
