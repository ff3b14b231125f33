// The lock board opened by a person in a browser, behind the guard that docs/board.md gives ("Mounting it"): the
// guide's own code, taken from the guide, mounted on a real application; real Chromium logs in with HTTP Basic.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import * as crypto from 'node:crypto';
import * as nestCommon from '@nestjs/common';
import type { CanActivate } from '@nestjs/common';
import ts from 'typescript';
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { codeBlocks, projectDocs } from '../docs/markdown.js';
import { launchChromium, pathPrefixProxy, startBoardApp } from '../support/board-kit.js';
import type { BoardApp, BoardAppOptions } from '../support/board-kit.js';
import { until } from '../support/async.js';
import { LockTestKit } from '../support/lock-test-kit.js';
import { redisUrl, uniquePrefix } from '../support/redis.js';

const GUARD_FILE = 'src/board-auth.guard.ts';
const USER = 'oncall';
const PASSWORD = 'correct horse: battery staple';

/**
 * The guard class of docs/board.md, compiled from the guide's block as it is written (its imports given the modules
 * this test uses, so its exceptions are the application's own).
 */
function guideGuard(): new () => CanActivate {
  const doc = projectDocs().find((d) => d.path === 'docs/board.md')!;
  const block = codeBlocks(doc.text).find(
    (b) => b.lang === 'ts' && b.code.split('\n')[0].trim() === `// ${GUARD_FILE}`,
  );
  if (!block) throw new Error(`docs/board.md has no \`// ${GUARD_FILE}\` block`);
  const js = ts.transpileModule(block.code, {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, experimentalDecorators: true },
  }).outputText;
  const modules: Record<string, unknown> = { '@nestjs/common': nestCommon, 'node:crypto': crypto };
  const load = (name: string) => {
    if (!(name in modules)) throw new Error(`the guide's guard imports ${name}, which this test does not provide`);
    return modules[name];
  };
  const module = { exports: {} as Record<string, unknown> };
  new Function('require', 'module', 'exports', js)(load, module, module.exports);
  const guard = Object.values(module.exports).find((v) => typeof v === 'function' && /Guard$/.test(v.name));
  if (!guard) throw new Error(`the \`// ${GUARD_FILE}\` block of docs/board.md exports no guard class`);
  return guard as new () => CanActivate;
}

const kit = new LockTestKit();
let browser: Browser;
let Guard: new () => CanActivate;

beforeAll(async () => {
  // The guide's guard reads these when Nest creates it.
  process.env.BOARD_USER = USER;
  process.env.BOARD_PASSWORD = PASSWORD;
  Guard = guideGuard();
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  delete process.env.BOARD_USER;
  delete process.env.BOARD_PASSWORD;
  await browser?.close();
});
afterEach(() => kit.closeAll());

async function board(options: Partial<BoardAppOptions> = {}): Promise<BoardApp> {
  const app = await startBoardApp({
    redis: redisUrl(),
    keyPrefix: uniquePrefix('login'),
    board: { path: 'admin/locks', guards: [Guard] },
    ...options,
  });
  kit.add(() => app.close());
  return app;
}

async function newPage(options: BrowserContextOptions = {}): Promise<Page> {
  const context = await browser.newContext(options);
  kit.add(() => context.close());
  return context.newPage();
}

function keysShown(page: Page): Promise<string[]> {
  return page.locator('#rows tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-key') ?? ''));
}

async function untilRows(page: Page, expected: string[]): Promise<void> {
  let keys: string[] = [];
  await until(
    async () => (keys = await keysShown(page)).join() === expected.join(),
    15_000,
    `the rows ${JSON.stringify(expected)} (table shows ${JSON.stringify(keys)}; error box: ${await page
      .locator('#error')
      .textContent()
      .catch(() => '?')})`,
  );
}

describe("the guide's board guard in a browser", () => {
  it.each(['express', 'fastify'] as const)(
    'with the login (%s): Chromium opens the board and sees the held locks',
    async (platform) => {
      const app = await board({ platform });
      const lock = await app.locks.acquire('invoice:7');
      kit.add(() => lock.release());
      const page = await newPage({ httpCredentials: { username: USER, password: PASSWORD } });
      const answer = await page.goto(`${app.origin}/admin/locks`);
      expect(answer?.status()).toBe(200);
      await untilRows(page, ['invoice:7']);
    },
    90_000,
  );

  it('without credentials: 401 with a Basic challenge (the page, its files and the JSON)', async () => {
    const app = await board();
    const page = await newPage();
    // Headless Chromium has no login prompt to show: the navigation ends in ERR_INVALID_AUTH_CREDENTIALS, after the
    // answer that a browser with a window turns into the prompt.
    const challenged = page.waitForResponse((r) => r.url().endsWith('/admin/locks/index.html'));
    await page.goto(`${app.origin}/admin/locks/index.html`).catch(() => undefined);
    const answer = await challenged;
    expect(answer.status()).toBe(401);
    expect(answer.headers()['www-authenticate']).toMatch(/^Basic realm="lock board"/);
    for (const path of ['board.js', 'api/view']) {
      const res = await fetch(`${app.origin}/admin/locks/${path}`);
      expect({ path, status: res.status, challenge: res.headers.get('www-authenticate') }).toEqual({
        path,
        status: 401,
        challenge: expect.stringMatching(/^Basic realm=/),
      });
    }
  }, 90_000);

  it('wrong credentials are refused the same way; the right ones are accepted by curl-like clients too', async () => {
    const app = await board();
    const basic = (user: string, password: string) =>
      fetch(`${app.origin}/admin/locks/api/snapshot`, {
        headers: { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` },
      });
    for (const [user, password] of [
      [USER, 'wrong'],
      ['someone', PASSWORD],
      [USER, `${PASSWORD}x`],
      ['', ''],
    ]) {
      const res = await basic(user, password);
      expect({ user, password, status: res.status }).toEqual({ user, password, status: 401 });
      expect(res.headers.get('www-authenticate')).toMatch(/^Basic realm=/);
    }
    const bearer = await fetch(`${app.origin}/admin/locks/api/snapshot`, { headers: { authorization: 'Bearer x' } });
    expect(bearer.status).toBe(401);
    expect((await basic(USER, PASSWORD)).status).toBe(200);
  }, 90_000);

  it('opened with the credentials in its address (http://user:password@host/…), the page loads its data', async () => {
    const app = await board();
    const lock = await app.locks.acquire('invoice:8');
    kit.add(() => lock.release());
    const userinfo = `${encodeURIComponent(USER)}:${encodeURIComponent(PASSWORD)}@`;
    const page = await newPage();
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    const answer = await page.goto(`${app.origin.replace('://', `://${userinfo}`)}/admin/locks/`);
    expect(answer?.status()).toBe(200);
    await untilRows(page, ['invoice:8']);
    // The filter rewrites the address and reads again.
    await page.locator('#filter').fill('nothing-here');
    await until(
      async () => (await page.locator('#empty').isVisible()) && (await keysShown(page)).length === 0,
      10_000,
      'the filtered view',
    );
    expect(await page.locator('#error').isVisible()).toBe(false);
    expect(problems).toEqual([]);
  }, 90_000);

  it('with credentials in the address behind a proxy that adds a path prefix, the requests keep the prefix', async () => {
    const app = await board();
    const lock = await app.locks.acquire('invoice:9');
    kit.add(() => lock.release());
    const proxy = await pathPrefixProxy(app.origin, '/ops');
    kit.add(() => proxy.close());
    const requested: string[] = [];
    const page = await newPage();
    page.on('request', (r) => requested.push(new URL(r.url()).pathname));
    const userinfo = `${encodeURIComponent(USER)}:${encodeURIComponent(PASSWORD)}@`;
    await page.goto(`${proxy.origin.replace('://', `://${userinfo}`)}/ops/admin/locks`);
    await untilRows(page, ['invoice:9']);
    expect(requested.filter((p) => p.includes('/api/'))).not.toEqual([]);
    expect(requested.filter((p) => !p.startsWith('/ops/admin/locks'))).toEqual([]);
  }, 90_000);
});
