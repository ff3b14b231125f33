import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { AppModule } from './app.module.js';

interface RedisServerProcess {
  readonly url: string;
  stop(): Promise<void>;
  stopSync(): void;
}

/** Signals that stop the app (a process manager, `docker stop`, Ctrl-C, a closed terminal). */
const STOP_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;

/** Starts the sample app on PORT (default 3000) against REDIS_URL, or a redis-server of its own. */
async function bootstrap(): Promise<void> {
  const logger = new Logger('SampleApp');
  let redisUrl = process.env.REDIS_URL;
  let ownServer: RedisServerProcess | undefined;
  if (!redisUrl) {
    // The helper lives in tools/ at the project root: one level up from sample-app/main.ts, two from the compiled
    // dist-sample/sample-app/main.js.
    const here = dirname(fileURLToPath(import.meta.url));
    const file = ['../tools/redis-server.mjs', '../../tools/redis-server.mjs'].map((p) => resolve(here, p)).find((p) => existsSync(p));
    if (!file) throw new Error('tools/redis-server.mjs not found: run the sample app from the repository');
    const helper = pathToFileURL(file).href;
    const { startRedisServer } = (await import(helper)) as { startRedisServer(): Promise<RedisServerProcess> };
    ownServer = await startRedisServer();
    redisUrl = ownServer.url;
    logger.log(`REDIS_URL not set: started a redis-server of its own at ${redisUrl}`);
  }
  const app = await NestFactory.create(AppModule.forRedis(redisUrl));
  // Shutdown on a signal: close the app (its locks are released, its shutdown hooks run), then stop the redis-server
  // it started and remove its folder, then exit. Nest's own enableShutdownHooks() re-raises the signal after closing,
  // which ends the process before anything else could run, so the redis-server would be left behind.
  let stopping = false;
  for (const signal of STOP_SIGNALS) {
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      logger.log(`${signal}: shutting down`);
      void app
        .close()
        .catch((err: unknown) => logger.error(`shutdown failed: ${String(err)}`))
        .then(() => ownServer?.stop())
        .finally(() => process.exit(128 + constants.signals[signal]));
    });
  }
  // Any other way out (an uncaught error, process.exit): only synchronous work runs then.
  if (ownServer) {
    const server = ownServer;
    process.once('exit', () => server.stopSync());
  }
  const port = Number(process.env.PORT ?? 3000);
  await app.listen(port, '127.0.0.1');
  logger.log(`articles sample listening on http://127.0.0.1:${port} (Redis ${redisUrl})`);
}

bootstrap().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
