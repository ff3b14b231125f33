// The lock board's load charts and leaders table in a real browser (Chromium through playwright-core) against a real
// Nest application and Redis, under the strict Content-Security-Policy the board sends.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, startBoardApp } from '../support/board-kit.js';
import type { BoardApp, BoardAppOptions } from '../support/board-kit.js';
import { LockTestKit } from '../support/lock-test-kit.js';
import { redisUrl, uniquePrefix } from '../support/redis.js';
import { deferred, until } from '../support/async.js';
import type { BoardView } from '../../lib/board/index.js';

const kit = new LockTestKit();
let browser: Browser;

beforeAll(async () => {
  browser = await launchChromium();
}, 60_000);
afterAll(async () => browser?.close());
afterEach(() => kit.closeAll());

async function board(options: Partial<BoardAppOptions> = {}): Promise<BoardApp> {
  const app = await startBoardApp({ redis: redisUrl(), keyPrefix: uniquePrefix('chart'), ...options });
  kit.add(() => app.close());
  return app;
}

/** A page whose CSP violations and script errors are recorded. */
async function open(url: string): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext();
  kit.add(() => context.close());
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`script error: ${err.message}`));
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  await page.goto(url);
  return { page, problems };
}

/** The numbers a kind's chart says (its legend), and how many alarms its marks count. */
async function chartOf(page: Page, kind: string) {
  const chart = page.locator(`#chart-${kind}`);
  return {
    holds: Number(await chart.locator('.legend.holds').getAttribute('data-now')),
    waiters: Number(await chart.locator('.legend.waiters').getAttribute('data-now')),
    alarms: await chart
      .locator('svg .alarm-mark')
      .evaluateAll((marks) => marks.reduce((n, m) => n + Number(m.getAttribute('data-count')), 0)),
    label: (await chart.locator('svg').getAttribute('aria-label')) ?? '',
    points: await chart
      .locator('svg polyline.holds')
      .evaluate((p) => (p.getAttribute('points') ?? '').split(' ').filter(Boolean).length),
  };
}

describe('lock board charts and leaders', () => {
  it('charts this instance’s holds and waiters per kind, and marks the deadlock alarm, under the board’s own CSP', async () => {
    const app = await board({
      lockOptions: { holdWarningMs: 400, waitWarningMs: 0 },
      board: { refreshMs: 200, historySampleMs: 100 },
    });
    const { locks } = app;
    const a = await locks.acquire('c:a');
    const b = await locks.acquire('c:b');
    const waiters = [1, 2, 3].map(() => locks.acquire('c:a', { waitTimeoutMs: 30_000 }));
    const permit = await locks.acquirePermit('c:pool', { limit: 1 });
    const { page, problems } = await open(`${app.origin}/locks/`);
    await page.locator('#chart-lock').waitFor({ state: 'visible', timeout: 15_000 });
    await until(
      async () => {
        const c = await chartOf(page, 'lock');
        return c.holds === 2 && c.waiters === 3 && c.alarms > 0;
      },
      15_000,
      'the lock chart to show 2 holds, 3 waiters and the alarm on c:a',
    );
    const lock = await chartOf(page, 'lock');
    expect(lock.label).toMatch(/holds now 2 \(peak 2\), waiters now 3 \(peak 3\), .*\d+ deadlock alarms?/);
    expect(lock.points).toBeGreaterThan(2); // the instance's samples, not just the point now
    const semaphore = await chartOf(page, 'semaphore');
    expect([semaphore.holds, semaphore.waiters]).toEqual([1, 0]);
    expect((await chartOf(page, 'leader')).holds).toBe(0);
    // The numbers the page draws are the fleet's (here one instance: the view's `fleet.total`, now last).
    const view = (await (await fetch(`${app.origin}/locks/api/view`)).json()) as BoardView;
    const now = view.fleet.total[view.fleet.total.length - 1];
    expect(now.holds).toEqual({ lock: 2, semaphore: 1, leader: 0 });
    expect(now.waiters).toEqual({ lock: 3, semaphore: 0, leader: 0 });
    expect(view.fleet.instances[0].now.heldAlarms.lock).toBeGreaterThan(0);

    // Waiters served: the chart follows.
    await a.release();
    for (const w of waiters) await (await w).release();
    await until(async () => (await chartOf(page, 'lock')).waiters === 0, 15_000, 'no waiter left');
    await Promise.all([b.release(), permit.release()]);
    expect(problems).toEqual([]);
  }, 90_000);

  it('a board opened fresh shows the samples its instance kept before it was opened', async () => {
    const app = await board({ board: { historySampleMs: 100 } });
    const held = await app.locks.acquire('before');
    await new Promise((r) => setTimeout(r, 700));
    await held.release();
    const { page, problems } = await open(`${app.origin}/locks/`);
    await page.locator('#chart-lock').waitFor({ state: 'visible', timeout: 15_000 });
    const lock = await chartOf(page, 'lock');
    expect(lock.holds).toBe(0);
    expect(lock.label).toContain('holds now 0 (peak 1)');
    expect(problems).toEqual([]);
  }, 60_000);

  it('lists the leaders: name, holder, term and since, and the leadership lock as kind leader', async () => {
    const app = await board({ board: { refreshMs: 200 } });
    const elected = deferred();
    const stop = app.locks.campaign('relay', (lead) => {
      elected.resolve();
      return new Promise<void>((resolve) => lead.signal.addEventListener('abort', () => resolve()));
    });
    kit.add(stop);
    await elected.promise;
    const leader = (await app.locks.leader('relay'))!;
    const { page, problems } = await open(`${app.origin}/locks/`);
    const row = page.locator('#leader-rows tr[data-leader="relay"]');
    await row.waitFor({ state: 'visible', timeout: 15_000 });
    const cells = await row.locator('th, td').allInnerTexts();
    expect(cells[0]).toBe('relay');
    expect(cells[1]).toContain(`pid ${process.pid}`);
    expect(cells[2]).toBe(String(leader.term));
    expect(cells[3]).toContain(
      await page.evaluate((iso) => new Date(iso).toLocaleString(), leader.since.toISOString()),
    );
    await page.locator('#rows tr[data-kind="leader"][data-key="leader:relay"]').waitFor({ timeout: 15_000 });
    await until(async () => (await chartOf(page, 'leader')).holds === 1, 15_000, 'the leadership chart');
    await stop();
    await page.locator('#leaders-section').waitFor({ state: 'hidden', timeout: 15_000 });
    expect(problems).toEqual([]);
  }, 60_000);
});
