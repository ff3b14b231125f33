// `npm run screenshot:fleet -- <dir>`: pictures of the lock board of a fleet under load, taken in Chromium. Three
// processes of the compiled sample application (BOARD_TOKEN set, samples every second, alarm thresholds lowered) share
// a redis-server of the script's own; requests spread over them take write locks (likes), the export semaphore
// (2 at a time: a queue that waits past the wait threshold) and a long hold; the relay's @Leader role runs on one.
// After about a minute and a half, writes <dir>/fleet-total.png (the fleet's total), fleet-instance.png (one instance
// picked), fleet-table.png (the instances behind the charts) and fleet-charts.png (the charts alone).
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { freePort, startRedisServer } from '../../tools/redis-server.mjs';
import { launchChromium } from '../support/board-kit.js';
import { buildSampleApp, startSampleInstance, stopSampleInstance, waitUntilAnswering } from '../support/sample-app.js';
import type { SampleInstance } from '../support/sample-app.js';

const TOKEN = 'screenshot';
const LOAD_MS = Number(process.env.LOAD_MS ?? 90_000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(dir: string): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const closers: (() => Promise<unknown>)[] = [];
  try {
    buildSampleApp();
    const redis = await startRedisServer();
    closers.push(() => redis.stop());
    const instances: SampleInstance[] = [];
    for (let i = 0; i < 3; i++) {
      const instance = startSampleInstance(await freePort(), redis.url, {
        BOARD_TOKEN: TOKEN,
        BOARD_SAMPLE_MS: '1000',
        LOCK_HOLD_WARNING_MS: '8000',
        LOCK_WAIT_WARNING_MS: '2000',
      });
      instances.push(instance);
      closers.push(() => stopSampleInstance(instance));
    }
    await Promise.all(instances.map((i) => waitUntilAnswering(i)));
    const post = (i: number, path: string) =>
      fetch(`${instances[i % 3].url}${path}`, { method: 'POST' }).catch(() => undefined);
    const started = Date.now();
    let stop = false;
    // Likes: 24 clients on 6 articles (write locks, contention), more in the middle of the run.
    const likes = Array.from({ length: 24 }, async (_, c) => {
      while (!stop) {
        const busy = Date.now() - started > LOAD_MS / 3 && Date.now() - started < (2 * LOAD_MS) / 3;
        // Quiet: a third of the clients, spread over the three instances; busy: all of them.
        if (busy || c % 3 === 0) await post(busy ? c : c / 3, `/articles/${c % 6}/likes`);
        else await sleep(300);
      }
    });
    // Exports: a burst of 24 on instance 1 every 25 s; two run at a time, the others queue (and wait too long).
    const exports = (async () => {
      while (!stop) {
        await Promise.all(Array.from({ length: 24 }, (_, n) => post(n % 2, `/articles/${n}/export`)));
        await sleep(25_000 - 4_000);
      }
    })();
    await sleep(LOAD_MS);
    const browser = await launchChromium();
    closers.push(() => browser.close());
    const context = await browser.newContext({
      viewport: { width: 1400, height: 900 },
      extraHTTPHeaders: { authorization: `Bearer ${TOKEN}` },
    });
    const page = await context.newPage();
    await page.goto(`${instances[0].url}/locks-board`);
    await page.locator('#chart-lock').waitFor();
    await sleep(1_500);
    await page.screenshot({ path: join(dir, 'fleet-total.png'), fullPage: true });
    await page.locator('#load').screenshot({ path: join(dir, 'fleet-charts.png') });
    await page.locator('#fleet summary').click();
    await page.locator('#fleet-rows tr').nth(2).waitFor();
    await page.locator('#load').screenshot({ path: join(dir, 'fleet-table.png') });
    const second = await page.locator('#fleet-rows tr').nth(1).getAttribute('data-instance');
    await page.locator('#fleet-pick').selectOption(second!);
    await sleep(1_200);
    await page.screenshot({ path: join(dir, 'fleet-instance.png'), fullPage: true });
    stop = true;
    await Promise.all([...likes, exports]);
    console.log(
      `screenshot:fleet: wrote fleet-total.png, fleet-charts.png, fleet-table.png, fleet-instance.png in ${dir}`,
    );
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
  }
}

const dir = process.argv[2];
if (!dir) {
  console.error('usage: npm run screenshot:fleet -- <directory for the pictures>');
  process.exit(2);
}
main(resolve(dir)).then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(`screenshot:fleet: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
