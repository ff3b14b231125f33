import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import type { INestApplication } from '@nestjs/common';
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

/** How long a shutdown may take before the process exits anyway (in milliseconds). */
const SHUTDOWN_LIMIT_MS = 10_000;

/** Starts a redis-server of the sample's own (tools/redis-server.mjs at the project root). */
async function startOwnRedisServer(): Promise<RedisServerProcess> {
  // One level up from sample-app/main.ts, two from the compiled dist-sample/sample-app/main.js.
  const here = dirname(fileURLToPath(import.meta.url));
  const file = ['../tools/redis-server.mjs', '../../tools/redis-server.mjs']
    .map((p) => resolve(here, p))
    .find((p) => existsSync(p));
  if (!file) throw new Error('tools/redis-server.mjs not found: run the sample app from the repository');
  const { startRedisServer } = (await import(pathToFileURL(file).href)) as {
    startRedisServer(): Promise<RedisServerProcess>;
  };
  return startRedisServer();
}

/** Starts the sample app on PORT (default 3000) against REDIS_URL, or a redis-server of its own. */
async function bootstrap(): Promise<void> {
  const logger = new Logger('SampleApp');
  let app: INestApplication | undefined;
  let ownServer: RedisServerProcess | undefined;
  let stopping: NodeJS.Signals | undefined;
  // Shutdown on a signal: close the app (its locks are released, its shutdown hooks run), then stop the redis-server
  // it started and remove its folder, then exit. The handlers are set before anything starts, so a signal during
  // start-up stops what has started so far; Nest's own enableShutdownHooks() would re-raise the signal after closing,
  // ending the process before the redis-server could be stopped. A second signal, or a shutdown over
  // SHUTDOWN_LIMIT_MS, stops the redis-server at once and exits.
  const shutdown = async (signal: NodeJS.Signals): Promise<void> => {
    logger.log(`${signal}: shutting down`);
    const limit = setTimeout(() => exitNow(signal, 'shutdown took too long'), SHUTDOWN_LIMIT_MS);
    limit.unref();
    await app?.close().catch((err: unknown) => logger.error(`shutdown failed: ${String(err)}`));
    await ownServer?.stop();
    process.exit(128 + constants.signals[signal]);
  };
  const exitNow = (signal: NodeJS.Signals, why: string): void => {
    logger.warn(`${why}: stopping now`);
    ownServer?.stopSync();
    process.exit(128 + constants.signals[signal]);
  };
  for (const signal of STOP_SIGNALS) {
    process.on(signal, () => {
      if (stopping) return exitNow(signal, `${signal} while shutting down`);
      stopping = signal;
      // During start-up the step under way finishes first (see below); after it, shut down now.
      if (started) void shutdown(signal);
    });
  }
  let started = false;
  let redisUrl = process.env.REDIS_URL;
  if (!redisUrl) {
    ownServer = await startOwnRedisServer();
    redisUrl = ownServer.url;
    // Any other way out (an uncaught error, process.exit): only synchronous work runs then.
    const server = ownServer;
    process.once('exit', () => server.stopSync());
    logger.log(`REDIS_URL not set: started a redis-server of its own at ${redisUrl}`);
  }
  if (!stopping) app = await NestFactory.create(AppModule.forRedis(redisUrl));
  const port = Number(process.env.PORT ?? 3000);
  if (!stopping) {
    await app!.listen(port, '127.0.0.1');
    logger.log(`articles sample listening on http://127.0.0.1:${port} (Redis ${redisUrl})`);
  }
  started = true;
  if (stopping) await shutdown(stopping);
}

bootstrap().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
