// The lock board's charts for the whole fleet, read at a glance, in a real browser (Chromium through playwright-core)
// against real Nest applications sharing one Redis and key prefix.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, startBoardApp } from '../support/board-kit.js';
import type { BoardApp, BoardAppOptions } from '../support/board-kit.js';
import { LockTestKit } from '../support/lock-test-kit.js';
import { RedisProxy } from '../support/redis-proxy.js';
import { redisUrl, uniquePrefix } from '../support/redis.js';
import { until } from '../support/async.js';
import type { BoardView } from '../../lib/board/index.js';

const kit = new LockTestKit();
let browser: Browser;

beforeAll(async () => {
  browser = await launchChromium();
}, 60_000);
afterAll(async () => browser?.close());
afterEach(() => kit.closeAll());

async function board(options: Partial<BoardAppOptions> & { keyPrefix: string }): Promise<BoardApp> {
  const app = await startBoardApp({ redis: redisUrl(), ...options });
  kit.add(() => app.close());
  kit.watchPrefix(redisUrl(), options.keyPrefix);
  return app;
}

/** A page whose script errors, CSP violations, console errors and failed requests are recorded. */
async function open(url: string): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext();
  kit.add(() => context.close());
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`script error: ${err.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' || /Content Security Policy|Refused to/i.test(m.text()))
      problems.push(`console: ${m.text()}`);
  });
  page.on('response', (r) => {
    if (r.status() === 404) problems.push(`404: ${r.url()}`);
  });
  await page.goto(url);
  return { page, problems };
}

async function chartOf(page: Page, kind: string) {
  const chart = page.locator(`#chart-${kind}`);
  const now = async (cls: string) => Number(await chart.locator(`.legend.${cls}`).getAttribute('data-now'));
  return {
    holds: await now('holds'),
    waiters: await now('waiters'),
    inDoubt: await now('in-doubt'),
    label: (await chart.locator('svg').getAttribute('aria-label')) ?? '',
    axisStart: (await chart.locator('svg text').nth(3).textContent()) ?? '',
    /** The x of the first point of the holds line, and where the plot starts and ends. */
    firstX: await chart
      .locator('svg polyline.holds')
      .evaluate((p) => Number((p.getAttribute('points') ?? '').split(' ')[0]?.split(',')[0])),
    /** Each alarm mark: its top, the plot's bottom (the axis), its count and its title. */
    marks: await chart.locator('svg').evaluate((svg) => {
      const axis = Number(svg.querySelector('line.axis')?.getAttribute('y1'));
      return [...svg.querySelectorAll('.alarm-mark')].map((m) => ({
        top: Number(m.getAttribute('y')),
        axis,
        count: Number(m.getAttribute('data-count')),
        waited: Number(m.getAttribute('data-waited')),
        title: m.querySelector('title')?.textContent ?? '',
      }));
    }),
  };
}

describe('lock board: the fleet at a glance', () => {
  it('plots the total of three instances, and shows each one (picker and table)', async () => {
    const keyPrefix = uniquePrefix('fleet');
    const options = { keyPrefix, board: { refreshMs: 200, historySampleMs: 200 } };
    const [one, two, three] = [await board(options), await board(options), await board(options)];
    const held = [await one.locks.acquire('f:a'), await two.locks.acquire('f:b'), await two.locks.acquire('f:c')];
    const waiting = three.locks.acquire('f:a', { waitTimeoutMs: 30_000 });
    const { page, problems } = await open(`${one.origin}/locks/`);
    await page.locator('#chart-lock').waitFor({ state: 'visible', timeout: 15_000 });
    await until(
      async () => {
        const c = await chartOf(page, 'lock');
        return c.holds === 3 && c.waiters === 1;
      },
      15_000,
      'the lock chart to show the fleet: 3 holds, 1 waiter',
    );
    expect((await chartOf(page, 'lock')).label).toContain('of 3 instances');
    await expect(page.locator('#fleet-rows tr').count()).resolves.toBe(3);
    const view = (await (await fetch(`${one.origin}/locks/api/view`)).json()) as BoardView;
    expect(view.fleet.instances.map((i) => i.pid)).toEqual([process.pid, process.pid, process.pid]);
    const second = view.fleet.instances.find((i) => i.now.holds.lock === 2)!;
    await page.locator('#fleet-pick').selectOption(second.id);
    await until(async () => (await chartOf(page, 'lock')).holds === 2, 5_000, 'the chart of the second instance');
    expect((await chartOf(page, 'lock')).waiters).toBe(0);

    await held[0].release();
    await (await waiting).release();
    await Promise.all(held.slice(1).map((h) => h.release()));
    expect(problems).toEqual([]);
  }, 90_000);

  it('spans the history there is; alarms are counted marks under the axis, waits labelled as waits; a leadership is no alarm', async () => {
    const keyPrefix = uniquePrefix('glance');
    const app = await board({
      keyPrefix,
      lockOptions: { holdWarningMs: 300, waitWarningMs: 300 },
      board: { refreshMs: 200, historySampleMs: 200 },
    });
    const peer = kit.engine({ keyPrefix, holdWarningMs: 300, waitWarningMs: 300 });
    const stops = [
      app.locks.campaign('warmer', (l) => aborted(l.signal)),
      peer.campaign('warmer', (l) => aborted(l.signal)),
    ];
    kit.add(() => Promise.all(stops.map((s) => s())));
    const held = await app.locks.acquire('g:a');
    const waiters = [1, 2, 3].map(() => app.locks.acquire('g:a', { waitTimeoutMs: 30_000 }));
    const { page, problems } = await open(`${app.origin}/locks/`);
    await page.locator('#chart-lock').waitFor({ state: 'visible', timeout: 15_000 });
    await until(
      async () => (await chartOf(page, 'lock')).marks.some((m) => m.waited > 0),
      15_000,
      'an alarm mark for the waits',
    );
    const lock = await chartOf(page, 'lock');
    // A board a few seconds old draws its history across the chart, not in its rightmost 5 %.
    expect(lock.axisStart).toMatch(/^−\d+ s$/);
    expect(lock.firstX).toBeLessThan(28 + 0.2 * 288);
    for (const mark of lock.marks) expect(mark.top).toBeGreaterThan(mark.axis);
    const total = lock.marks.reduce((n, m) => n + m.count, 0);
    expect(total).toBeGreaterThanOrEqual(4); // the hold and three waits
    expect(lock.marks.some((m) => /\d+ waits? too long/.test(m.title))).toBe(true);
    expect(lock.label).toMatch(/\d+ deadlock alarms \(1 hold kept too long, 3 waits too long\)/);
    await page.locator('ol#events .type.waited-too-long').first().waitFor({ timeout: 5_000 });
    // The leadership has lasted past holdWarningMs and its standby waited past waitWarningMs: no alarm for it.
    const leaderRow = page.locator('#rows tr[data-kind="leader"]');
    await expect(leaderRow.getAttribute('class')).resolves.not.toContain('alarm');
    await expect(leaderRow.locator('.badge').count()).resolves.toBe(0);
    expect((await chartOf(page, 'leader')).marks).toEqual([]);
    await held.release();
    for (const w of waiters) await (await w).release();
    expect(problems).toEqual([]);
  }, 90_000);

  it('a leadership is highlighted only when the campaign of the instance serving the board asks (alarms: true)', async () => {
    const keyPrefix = uniquePrefix('loud');
    const app = await board({ keyPrefix, lockOptions: { holdWarningMs: 200 }, board: { refreshMs: 100 } });
    const stops = [
      app.locks.campaign('quiet', (l) => aborted(l.signal)),
      app.locks.campaign('loud', (l) => aborted(l.signal), { alarms: true }),
    ];
    kit.add(() => Promise.all(stops.map((s) => s())));
    const flagged = async () => {
      const snapshot = (await (await fetch(`${app.origin}/locks/api/snapshot`)).json()) as BoardView['snapshot'];
      return snapshot.entries.filter((e) => e.alarms.heldTooLong).map((e) => e.key);
    };
    await until(async () => (await flagged()).length > 0, 5_000, 'a leadership flagged');
    expect(await flagged()).toEqual(['leader:loud']);
  }, 20_000);

  it('a hold in doubt is marked in the table and counted in the charts', async () => {
    const proxy = await RedisProxy.start(redisUrl());
    kit.add(() => proxy.close());
    const keyPrefix = uniquePrefix('doubt');
    const app = await board({
      redis: proxy.url,
      keyPrefix,
      lockOptions: { commandTimeoutMs: 300, leaseMs: 30_000 },
      board: { refreshMs: 200, historySampleMs: 200 },
    });
    const held = await app.locks.acquire('d:a');
    const { page, problems } = await open(`${app.origin}/locks/`);
    await page.locator('#rows tr[data-key="d:a"] li[data-state="held"]').waitFor({ timeout: 15_000 });
    proxy.cut({ refuse: true });
    await page.locator('#rows tr[data-key="d:a"] li[data-state="in-doubt"] .badge').waitFor({ timeout: 10_000 });
    await until(
      async () => (await chartOf(page, 'lock')).inDoubt === 1,
      10_000,
      'the chart to count the hold in doubt',
    );
    proxy.heal();
    await until(() => held.state === 'held', 10_000, 'held again');
    await held.release();
    // Only Redis errors and the board's 503 answers while Redis was away: no script error.
    expect(problems.filter((p) => !/503|Service Unavailable/.test(p))).toEqual([]);
  }, 60_000);
});

/** Resolves once `signal` aborts. */
function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}
