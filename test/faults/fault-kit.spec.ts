import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { blockEventLoop, partitionSupport, RedisPartition, RedisProcess } from '../support/faults.js';

/** Whether `promise` settles within `ms` (without consuming its outcome). */
function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms))),
  ]).finally(() => clearTimeout(timer));
}

/** A plain client that does not retry or reconnect on its own, and records every connection event it sees. */
function client(url: string): { redis: Redis; events: string[] } {
  const events: string[] = [];
  const redis = new Redis(url, {
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 1_000,
    disconnectTimeout: 100,
    lazyConnect: true,
  });
  for (const event of ['error', 'close', 'end', 'reconnecting'] as const) {
    // Errors come from another realm than the test's (Jest's VM context), so no `instanceof Error` here.
    redis.on(event, (arg?: { message?: string }) => events.push(arg?.message ? `${event}: ${arg.message}` : event));
  }
  return { redis, events };
}

const reason = await partitionSupport();
if (reason) console.warn(`fault kit: partition tests skipped: ${reason}`);

describe('fault kit', () => {
  const clients: Redis[] = [];
  const open = (url: string) => {
    const c = client(url);
    clients.push(c.redis);
    return c;
  };
  afterAll(() => {
    for (const c of clients) c.disconnect();
  });

  describe('RedisProcess', () => {
    let server: RedisProcess;
    beforeAll(async () => {
      server = await RedisProcess.start();
    });
    afterAll(() => server.dispose());

    it('pause: PING gets no answer until resume, then the same connection answers', async () => {
      const { redis, events } = open(server.url);
      await redis.connect();
      expect(await redis.ping()).toBe('PONG');
      server.pause();
      const ping = redis.ping();
      expect(await settlesWithin(ping, 500)).toBe(false);
      server.resume();
      expect(await ping).toBe('PONG');
      expect(events).toEqual([]);
    });

    it('kill + restart: refused while dead, back on the same port with no data', async () => {
      const admin = open(server.url).redis;
      await admin.connect();
      await admin.set('fault-kit:key', 'value');
      const { port } = server;
      await server.kill();
      const probe = open(server.url);
      await expect(probe.redis.connect()).rejects.toThrow();
      expect(probe.events[0]).toMatch(/ECONNREFUSED/);
      await server.restart();
      expect(server.port).toBe(port);
      const after = open(server.url).redis;
      await after.connect();
      expect(await after.get('fault-kit:key')).toBeNull();
      expect(await after.dbsize()).toBe(0);
    });

    it('kill works while paused, and dispose leaves nothing running', async () => {
      const other = await RedisProcess.start();
      const pid = other.pid;
      other.pause();
      await other.dispose();
      expect(() => process.kill(pid, 0)).toThrow();
    });
  });

  describe('RedisPartition', () => {
    const maybe = reason ? it.skip : it;
    let partition: RedisPartition | undefined;
    beforeAll(async () => {
      if (!reason) partition = await RedisPartition.create();
    });
    afterAll(() => partition?.dispose());

    maybe(
      `cut: PING gets no answer and no connection error; heal: answered on the same connection${reason ? ` (skipped: ${reason})` : ''}`,
      async () => {
        const p = partition!;
        const { redis, events } = open(p.url);
        await redis.connect();
        const id = await redis.client('ID');
        expect(await redis.ping()).toBe('PONG');

        await p.cut();
        const ping = redis.ping();
        expect(await settlesWithin(ping, 1_500)).toBe(false);
        expect(redis.status).toBe('ready');
        expect(events).toEqual([]);
        // A new connection does not get through either.
        const fresh = open(p.url).redis;
        await expect(fresh.connect()).rejects.toThrow();

        await p.heal();
        expect(await settlesWithin(ping, 8_000)).toBe(true);
        expect(await ping).toBe('PONG');
        expect(await redis.client('ID')).toBe(id);
        expect(events).toEqual([]);
      },
      15_000,
    );
  });

  it('blockEventLoop: no timer runs while it spins', async () => {
    let fired = 0;
    const timer = setTimeout(() => (fired = performance.now()), 0);
    const start = performance.now();
    blockEventLoop(100);
    await new Promise((r) => setTimeout(r, 0));
    clearTimeout(timer);
    expect(fired - start).toBeGreaterThanOrEqual(99);
  });
});
