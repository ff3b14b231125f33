import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { AppModule } from './app.module.js';

interface RedisServerProcess {
  readonly url: string;
  stop(): Promise<void>;
}

/** Starts the sample app on PORT (default 3000) against REDIS_URL, or a redis-server of its own. */
async function bootstrap(): Promise<void> {
  const logger = new Logger('SampleApp');
  let redisUrl = process.env.REDIS_URL;
  let ownServer: RedisServerProcess | undefined;
  if (!redisUrl) {
    // Compiled to dist-sample/sample-app/main.js; the helper lives in tools/ at the project root.
    const helper = pathToFileURL(resolve(dirname(fileURLToPath(import.meta.url)), '../../tools/redis-server.mjs')).href;
    const { startRedisServer } = (await import(helper)) as { startRedisServer(): Promise<RedisServerProcess> };
    ownServer = await startRedisServer();
    redisUrl = ownServer.url;
    logger.log(`REDIS_URL not set: started a redis-server of its own at ${redisUrl}`);
  }
  const app = await NestFactory.create(AppModule.forRedis(redisUrl));
  app.enableShutdownHooks();
  if (ownServer) {
    const server = ownServer;
    process.once('exit', () => void server.stop());
  }
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port, '127.0.0.1');
  logger.log(`articles sample listening on http://127.0.0.1:${port} (Redis ${redisUrl})`);
}

bootstrap().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
