// The lock board by keyboard alone and at 200 % zoom, in a real browser (Chromium through playwright-core).
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { until } from '../support/async.js';
import { launchChromium, startBoardApp } from '../support/board-kit.js';
import type { BoardApp, BoardAppOptions } from '../support/board-kit.js';
import { LockTestKit } from '../support/lock-test-kit.js';
import { redisUrl, uniquePrefix } from '../support/redis.js';

const kit = new LockTestKit();
let browser: Browser;

beforeAll(async () => {
  browser = await launchChromium();
}, 60_000);
afterAll(async () => browser?.close());
afterEach(() => kit.closeAll());

async function board(options: Partial<BoardAppOptions> = {}): Promise<BoardApp> {
  const app = await startBoardApp({ redis: redisUrl(), keyPrefix: uniquePrefix('board'), ...options });
  kit.add(() => app.close());
  return app;
}

async function open(url: string, options: BrowserContextOptions = {}): Promise<Page> {
  const context = await browser.newContext(options);
  kit.add(() => context.close());
  const page = await context.newPage();
  await page.goto(url);
  return page;
}

/** What has the keyboard focus: its id, or its accessible label, or its tag. */
function focused(page: Page): Promise<string> {
  return page.evaluate(() => {
    const el = (globalThis as any).document.activeElement;
    return el ? el.id || el.getAttribute('aria-label') || el.tagName.toLowerCase() : '';
  });
}

/** Presses Tab until `target` has the focus (at most `max` times); fails naming what had it. */
async function tabTo(page: Page, target: string, max = 30): Promise<void> {
  const path: string[] = [];
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    const now = await focused(page);
    path.push(now);
    if (now === target) return;
  }
  throw new Error(`Tab never reached ${target}; focus went ${path.join(' → ')}`);
}

describe('lock board accessibility', () => {
  it('reaches a key’s detail with Tab and Enter alone, keeps the focus across refreshes, and closes the confirmation with Escape', async () => {
    const app = await board({ board: { allowForceRelease: true, refreshMs: 150 } });
    const held = await Promise.all(['kb:1', 'kb:2'].map((k) => app.locks.acquire(k)));
    const page = await open(`${app.origin}/locks`);
    await until(async () => (await page.locator('#rows tr').count()) === 2, 15_000, 'both locks');
    await tabTo(page, 'Details of lock kb:2');
    // Several refreshes redraw the table: the key keeps the focus.
    await page.waitForTimeout(600);
    expect(await focused(page)).toBe('Details of lock kb:2');
    await page.keyboard.press('Enter');
    await until(async () => (await page.locator('#detail-rows tr').count()) === 1, 10_000, 'the detail view');
    expect(await page.locator('#detail-title').innerText()).toBe('lock kb:2');
    expect(await focused(page)).toBe('detail-title');
    await tabTo(page, 'release');
    await page.keyboard.press('Enter');
    await page.locator('#confirm').waitFor({ state: 'visible' });
    expect(await focused(page)).toBe('confirm-cancel');
    await page.keyboard.press('Escape');
    await page.locator('#confirm').waitFor({ state: 'hidden' });
    expect(await app.locks.inspect('kb:2')).not.toBeNull();
    // Close the detail by keyboard: the focus goes back to the key it came from.
    await tabTo(page, 'detail-close', 40);
    await page.keyboard.press('Enter');
    await page.locator('#detail').waitFor({ state: 'hidden' });
    expect(await focused(page)).toBe('Details of lock kb:2');
    await Promise.all(held.map((h) => h.release()));
  }, 90_000);

  it('is a semantic table: a caption, column headers with scope col, each key a row header with scope row', async () => {
    const app = await board();
    const held = await Promise.all(['sem:1', 'sem:2'].map((k) => app.locks.acquire(k)));
    const page = await open(`${app.origin}/locks`);
    await until(async () => (await page.locator('#rows tr').count()) === 2, 15_000, 'both locks');
    const prefix = app.locks.engine.settings.keyPrefix;
    expect(await page.locator('table#locks > caption').innerText()).toBe(`Held locks under ${prefix}`);
    const heads = await page
      .locator('table#locks thead th')
      .evaluateAll((ths) => ths.map((th) => `${th.textContent}:${th.getAttribute('scope')}`));
    expect(heads).toEqual(
      ['Kind', 'Key', 'Mode', 'Holders', 'Held for', 'Lease left', 'Fencing token', 'Waiting', 'Alarms'].map(
        (h) => `${h}:col`,
      ),
    );
    const rowHeads = await page
      .locator('#rows tr')
      .evaluateAll((trs) =>
        trs.map((tr) => `${tr.querySelector('th')?.getAttribute('scope')}:${tr.querySelector('th')?.textContent}`),
      );
    expect(rowHeads).toEqual(['row:sem:1', 'row:sem:2']);
    // The table is found by its caption.
    expect(await page.getByRole('table', { name: `Held locks under ${prefix}` }).count()).toBe(1);
    await Promise.all(held.map((h) => h.release()));
  }, 90_000);

  it('at 200 % zoom (a 1280 px wide window) the page does not scroll sideways; only the table scrolls, in its own region', async () => {
    const app = await board();
    const long = `report:${'x'.repeat(120)}`;
    const held = await Promise.all([long, 'zoom:1'].map((k) => app.locks.acquire(k)));
    const readers = await Promise.all(
      Array.from({ length: 3 }, () => app.locks.acquire('zoom:read', { mode: 'read' })),
    );
    const page = await open(`${app.origin}/locks`, { viewport: { width: 640, height: 720 }, deviceScaleFactor: 2 });
    await until(async () => (await page.locator('#rows tr').count()) === 3, 15_000, 'the locks');
    await page.getByRole('button', { name: 'Details of lock zoom:read' }).click();
    await until(async () => (await page.locator('#detail-rows tr').count()) === 3, 10_000, 'the detail view');
    const widths = await page.evaluate(() => {
      const doc = (globalThis as any).document;
      const region = doc.querySelector('.scroll');
      return {
        page: doc.documentElement.scrollWidth,
        window: doc.documentElement.clientWidth,
        regionFits: region.getBoundingClientRect().right <= doc.documentElement.clientWidth,
        regionFocusable: region.getAttribute('tabindex'),
      };
    });
    // Nothing outside a scroll region reaches past the window (a long key in the recent events did).
    const wide = await page.evaluate(() => {
      const doc = (globalThis as any).document;
      const all = [...doc.querySelectorAll('body *')] as any[];
      return all
        .filter((e) => !e.closest('.scroll') && e.getBoundingClientRect().right > doc.documentElement.clientWidth + 1)
        .map((e) => `${e.tagName.toLowerCase()}.${e.className}`);
    });
    expect(wide).toEqual([]);
    expect(widths.page).toBeLessThanOrEqual(widths.window);
    expect(widths.regionFits).toBe(true);
    expect(widths.regionFocusable).toBe('0');
    await Promise.all([...held, ...readers].map((h) => h.release()));
  }, 90_000);
});
