// What the board costs Redis, measured on a redis-server of the test's own (INFO commandstats): one SCAN snapshot per
// refresh interval shared by every viewer, the scan's time budget, and the cap on the keys it reads.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { Browser, Page } from 'playwright-core';
import type { BoardSnapshot } from '../../lib/board/index.js';
import { sleep, until } from '../support/async.js';
import { launchChromium, startBoardApp } from '../support/board-kit.js';
import type { BoardApp, BoardAppOptions } from '../support/board-kit.js';
import { SCRIPT_VARIANTS } from '../../lib/redis/scripts/index.js';
import { LockTestKit } from '../support/lock-test-kit.js';
import { commandStats, uniquePrefix } from '../support/redis.js';

const kit = new LockTestKit();
let browser: Browser;

beforeAll(async () => {
  browser = await launchChromium();
}, 60_000);
afterAll(async () => browser?.close());
afterEach(() => kit.closeAll());

/** A board on a redis-server of its own, with an admin client on that server. */
async function isolatedBoard(options: Partial<BoardAppOptions> = {}) {
  const server = await kit.server();
  const app: BoardApp = await startBoardApp({ redis: server.url, keyPrefix: uniquePrefix('board'), ...options });
  kit.add(() => app.close());
  return { app, admin: kit.redis(server.url), url: server.url };
}

async function open(url: string): Promise<Page> {
  const context = await browser.newContext();
  kit.add(() => context.close());
  const page = await context.newPage();
  await page.goto(url);
  return page;
}

async function rows(page: Page, count: number, what: string): Promise<void> {
  await until(async () => (await page.locator('#rows tr').count()) === count, 15_000, what);
}

async function snapshot(app: BoardApp): Promise<BoardSnapshot> {
  return (await (await fetch(`${app.origin}/locks/api/snapshot`)).json()) as BoardSnapshot;
}

describe('lock board snapshots', () => {
  it('shares one SCAN snapshot per refresh interval between every viewer: 2 pages and 3 JSON clients polling for 3 s', async () => {
    const { app, admin } = await isolatedBoard({ board: { refreshMs: 1_000 } });
    const held = await Promise.all(['shared:1', 'shared:2', 'shared:3'].map((k) => app.locks.acquire(k)));
    const pages = await Promise.all([open(`${app.origin}/locks`), open(`${app.origin}/locks`)]);
    await Promise.all(pages.map((p) => rows(p, 3, 'the locks on both pages')));
    await admin.config('RESETSTAT');
    let answered = 0;
    const stopAt = Date.now() + 3_000;
    const poller = async (path: string) => {
      while (Date.now() < stopAt) {
        const res = await fetch(`${app.origin}/locks/${path}`);
        const body = (await res.json()) as { entries?: unknown[]; snapshot?: { entries: unknown[] } };
        expect((body.entries ?? body.snapshot?.entries)?.length).toBe(3);
        answered++;
        await sleep(50);
      }
    };
    await Promise.all([poller('api/view'), poller('api/snapshot'), poller('api/view')]);
    const scans = (await commandStats(admin)).scan ?? 0;
    // Each JSON client asked about 20 times a second, each page about once a second: one scan per interval served all.
    expect(answered).toBeGreaterThan(30);
    expect(scans).toBeGreaterThanOrEqual(2);
    expect(scans).toBeLessThanOrEqual(5);
    await Promise.all(held.map((h) => h.release()));
  }, 90_000);

  it('stops a scan at its time budget (scanBudgetMs), marks the snapshot incomplete and the page says so', async () => {
    const { app, admin } = await isolatedBoard({ board: { scanCount: 10, scanBudgetMs: 10 } });
    // 30 000 keys that are not locks: with COUNT 10, a full scan takes about 3 000 calls, far past 10 ms.
    for (let i = 0; i < 30_000; i += 5_000) {
      const batch = admin.pipeline();
      for (let j = i; j < i + 5_000; j++) batch.set(`filler:${j}`, '1');
      await batch.exec();
    }
    const lock = await app.locks.acquire('budget:1');
    await admin.config('RESETSTAT');
    const taken = await snapshot(app);
    expect({ cut: taken.cut, complete: taken.complete, error: taken.error }).toEqual({
      cut: 'time-budget',
      complete: false,
      error: undefined,
    });
    // It stopped well before the end of the keyspace.
    expect((await commandStats(admin)).scan).toBeLessThan(2_000);
    const page = await open(`${app.origin}/locks`);
    await until(
      async () =>
        (await page.locator('#summary').innerText()).includes(
          'The scan stopped at its time budget: some keys may be missing; narrow the filter.',
        ),
      15_000,
      'the time-budget notice',
    );
    await lock.release();
  }, 90_000);

  it('stops a scan once it found more than maxKeys locks, reads only maxKeys, and says "at least N more, narrow the filter"', async () => {
    const { app, admin } = await isolatedBoard({ board: { maxKeys: 10, scanCount: 10 } });
    const keys = Array.from({ length: 200 }, (_, i) => `many:${String(i).padStart(3, '0')}`);
    const held = await Promise.all(keys.map((k) => app.locks.acquire(k, { leaseMs: 60_000 })));
    // Every script loaded up front: the first use of one (NOSCRIPT, then SCRIPT LOAD and EVALSHA again) would count
    // twice for the reads that meet it at once.
    for (const script of SCRIPT_VARIANTS) await admin.script('LOAD', script.source);
    await admin.config('RESETSTAT');
    const taken = await snapshot(app);
    expect({ cut: taken.cut, complete: taken.complete, entries: taken.entries.length }).toEqual({
      cut: 'max-keys',
      complete: false,
      entries: 10,
    });
    // It found more than 10 and stopped before the 200: the rest of the keyspace was not scanned, nor read.
    expect(taken.found).toBeGreaterThan(10);
    expect(taken.found).toBeLessThan(200);
    expect(taken.more).toBe(taken.found - 10);
    const stats = await commandStats(admin);
    expect(stats.scan).toBeLessThan(15);
    expect(stats.evalsha ?? 0).toBeLessThanOrEqual(12);
    const page = await open(`${app.origin}/locks`);
    await rows(page, 10, 'ten rows');
    const summary = await page.locator('#summary').innerText();
    expect(summary).toMatch(/At least \d+ more, narrow the filter\./);
    expect(summary).toContain('The scan stopped there: the locks shown are the first it met.');
    await Promise.all(held.map((h) => h.release()));
  }, 90_000);
});
