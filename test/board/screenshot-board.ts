// `npm run screenshot:board`: the picture of the lock board in the README (docs/images/board.png), taken in Chromium
// from the sample application (BOARD_TOKEN set, so the board is mounted at /locks-board) while two other processes
// hold locks and wait for them. Starts and stops its own redis-server.
import 'reflect-metadata';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import { NestFactory } from '@nestjs/core';
import { AppModule } from '../../sample-app/app.module.js';
import { LockService } from '../../lib/index.js';
import { startRedisServer } from '../../tools/redis-server.mjs';
import { launchChromium } from '../support/board-kit.js';
import { WorkerProcess } from '../support/worker-process.js';

const OUT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs', 'images', 'board.png');
const TOKEN = 'screenshot';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const closers: (() => Promise<unknown>)[] = [];
  const resources = { add: (c: () => Promise<unknown>) => void closers.push(c) };
  try {
    const redis = await startRedisServer();
    closers.push(() => redis.stop());
    process.env.BOARD_TOKEN = TOKEN;
    const app = await NestFactory.create(AppModule.forRedis(redis.url), { logger: false });
    closers.push(() => app.close());
    await app.listen(0, '127.0.0.1');
    const { port } = app.getHttpServer().address() as AddressInfo;
    const locks = app.get(LockService);
    const prefix = locks.engine.settings.keyPrefix;
    // Two other processes: one holds an export and a read lock, the other waits (fair) behind the export.
    const hold = (key: string, mode: 'read' | 'write', fair = false) =>
      WorkerProcess.start(resources, {
        kind: 'wait',
        redis: redis.url,
        prefix,
        key,
        mode,
        fair,
        waitTimeoutMs: 120_000,
      });
    const workers = [hold('export:2026-q3', 'write'), hold('article:42', 'read'), hold('invoice:7781', 'write')];
    await Promise.all(workers.map((w) => w.next('held', 30_000)));
    await hold('article:42', 'read').next('held', 30_000);
    const waiter = hold('export:2026-q3', 'write', true);
    await waiter.next('waiting', 30_000);
    // This process too: a lock of its own and a waiter behind another process's invoice lock.
    await locks.acquire('report:weekly');
    void locks.acquire('invoice:7781', { waitTimeoutMs: 120_000 }).catch(() => undefined);
    await sleep(6_000); // past the default waitWarningMs (5 s): the alarm highlight shows
    const browser = await launchChromium();
    closers.push(() => browser.close());
    const context = await browser.newContext({
      viewport: { width: 1280, height: 720 },
      extraHTTPHeaders: { authorization: `Bearer ${TOKEN}` },
    });
    const page = await context.newPage();
    await page.goto(`http://127.0.0.1:${port}/locks-board`);
    await page.locator('#rows tr').nth(3).waitFor();
    await page.getByRole('button', { name: 'Details of lock export:2026-q3' }).click();
    await page.locator('#detail-rows tr').first().waitFor();
    await sleep(1_200);
    mkdirSync(dirname(OUT), { recursive: true });
    await page.screenshot({ path: OUT, fullPage: true });
    console.log(`screenshot:board: wrote ${OUT}`);
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(`screenshot:board: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
