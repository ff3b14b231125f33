// Child process of the HTTP scenario: the articles sample app, unchanged, plus the bench-only unlocked twin of its
// PUT handler. Listens on 127.0.0.1:$PORT against $REDIS_URL and prints "ready" once it accepts requests.
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { DynamicModule } from '@nestjs/common';
import { AppModule } from '../../sample-app/app.module.js';
import { UnlockedArticlesController } from './unlocked-articles.controller.js';

/** The sample app's own module, with one more controller in it (so it shares the app's ArticlesService). */
function benchModule(redisUrl: string): DynamicModule {
  const app = AppModule.forRedis(redisUrl);
  return { ...app, controllers: [...(app.controllers ?? []), UnlockedArticlesController] };
}

async function main(): Promise<void> {
  const redisUrl = process.env.REDIS_URL;
  const port = Number(process.env.PORT);
  if (!redisUrl || !port) throw new Error('bench-app needs REDIS_URL and PORT');
  const app = await NestFactory.create(benchModule(redisUrl), { logger: ['error', 'warn'] });
  app.enableShutdownHooks();
  await app.listen(port, '127.0.0.1');
  process.stdout.write('ready\n');
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
