import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { AppModule } from './app.module.js';

interface RedisServerProcess {
  readonly url: string;
  stopNow(): void;
}

/** tools/redis-server.mjs at the project root, from sample-app/ (sources) or dist-sample/sample-app/ (compiled). */
function redisServerHelper(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const found = ['../tools/redis-server.mjs', '../../tools/redis-server.mjs'].map((p) => resolve(here, p)).find((p) => existsSync(p));
  if (!found) throw new Error(`tools/redis-server.mjs not found above ${here}: set REDIS_URL to a running Redis 7.0+`);
  return pathToFileURL(found).href;
}

/** Starts the sample app on PORT (default 3000) against REDIS_URL, or a redis-server of its own. */
async function bootstrap(): Promise<void> {
  const logger = new Logger('SampleApp');
  let redisUrl = process.env.REDIS_URL;
  if (!redisUrl) {
    const { startRedisServer } = (await import(redisServerHelper())) as { startRedisServer(): Promise<RedisServerProcess> };
    const server = await startRedisServer();
    // Its own redis-server and temp folder go when this process exits, whatever the cause: a stop signal (below), an
    // error, the end of the event loop. 'exit' listeners run synchronously, hence stopNow().
    process.once('exit', () => server.stopNow());
    redisUrl = server.url;
    logger.log(`REDIS_URL not set: started a redis-server of its own at ${redisUrl}`);
  }
  const app = await NestFactory.create(AppModule.forRedis(redisUrl));
  // SIGTERM, SIGINT, SIGHUP…: close the app (waiting requests get 503, running ones finish, locks are released), then
  // process.exit(0). Without useProcessExit, Nest re-raises the signal instead: the process dies by it and 'exit'
  // listeners never run, which would leave the redis-server above running.
  app.enableShutdownHooks([], { useProcessExit: true });
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port, '127.0.0.1');
  logger.log(`articles sample listening on http://127.0.0.1:${port} (Redis ${redisUrl})`);
}

bootstrap().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
