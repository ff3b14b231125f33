// The lock board in a real browser (Chromium through playwright-core) against a real Nest application and Redis:
// holders of other processes, waiters and the alarm highlight, the filter, escaping and the strict CSP.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { hostname } from 'node:os';
import helmet from 'helmet';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, startBoardApp } from '../support/board-kit.js';
import type { BoardApp, BoardAppOptions } from '../support/board-kit.js';
import { LockTestKit } from '../support/lock-test-kit.js';
import { redisUrl, uniquePrefix } from '../support/redis.js';
import { WorkerProcess } from '../support/worker-process.js';
import { until } from '../support/async.js';
import { RedisCluster } from '../support/topologies.js';
import type { BoardSnapshot } from '../../lib/board/index.js';

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

/** A page whose CSP violations and script errors are recorded (any of them fails the test that checks). */
async function open(url: string): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext();
  kit.add(() => context.close());
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`script error: ${err.message}`));
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  page.on('dialog', (d) => {
    problems.push(`dialog: ${d.message()}`);
    void d.dismiss();
  });
  await page.goto(url);
  return { page, problems };
}

/** The keys in the table, in order. */
function keysShown(page: Page): Promise<string[]> {
  return page.locator('#rows tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-key') ?? ''));
}

async function untilKeys(page: Page, check: (keys: string[]) => boolean, what: string): Promise<string[]> {
  let keys: string[] = [];
  await until(
    async () => check((keys = await keysShown(page))),
    15_000,
    `${what} (table shows ${JSON.stringify(keys)})`,
  );
  return keys;
}

function row(page: Page, key: string) {
  return page
    .locator('#rows tr')
    .filter({ has: page.getByRole('button', { name: `Details of lock ${key}`, exact: true }) });
}

/** A process holding `key` until told to release (a `wait` task on a free lock is granted at once). */
async function holder(prefix: string, key: string, mode: 'read' | 'write' = 'write'): Promise<WorkerProcess> {
  const worker = WorkerProcess.start(kit, {
    kind: 'wait',
    redis: redisUrl(),
    prefix,
    key,
    mode,
    fair: false,
    waitTimeoutMs: 10_000,
  });
  await worker.next('held', 20_000);
  return worker;
}

describe('lock board page', () => {
  it('shows locks held by two other processes with their holders, and drops each once released', async () => {
    const app = await board();
    const prefix = app.locks.engine.settings.keyPrefix;
    const [one, two] = await Promise.all([holder(prefix, 'invoice:1', 'write'), holder(prefix, 'report:7', 'read')]);
    const { page, problems } = await open(`${app.origin}/locks`);
    expect(page.url()).toBe(`${app.origin}/locks/index.html`);
    await untilKeys(page, (k) => k.join() === 'invoice:1,report:7', 'both locks');
    const invoice = await row(page, 'invoice:1').innerText();
    expect(invoice).toContain('write');
    expect(invoice).toContain(`pid ${one.pid}`);
    const report = await row(page, 'report:7').innerText();
    expect(report).toContain('read');
    expect(report).toContain(`pid ${two.pid}`);
    one.send({ type: 'release' });
    await one.next('released');
    await untilKeys(page, (k) => k.join() === 'report:7', 'invoice:1 to disappear');
    two.send({ type: 'release' });
    await two.next('released');
    await untilKeys(page, (k) => k.length === 0, 'report:7 to disappear');
    await page.locator('#empty').waitFor({ state: 'visible' });
    expect(problems).toEqual([]);
  }, 90_000);

  it('shows waiters and highlights them once they waited longer than waitWarningMs', async () => {
    const app = await board({ lockOptions: { waitWarningMs: 1_500, holdWarningMs: 0 } });
    const patience = 30_000;
    const prefix = app.locks.engine.settings.keyPrefix;
    const owner = await holder(prefix, 'queue:fair');
    // A fair waiter in another process (its arrival is in Redis), and a non-fair waiter of the board's own process.
    const fairWaiter = WorkerProcess.start(kit, {
      kind: 'wait',
      redis: redisUrl(),
      prefix,
      key: 'queue:fair',
      mode: 'write',
      fair: true,
      waitTimeoutMs: patience,
    });
    await fairWaiter.next('waiting');
    const blocker = await app.locks.engine.acquire('queue:own');
    const ownWait = kit.engine({ keyPrefix: prefix }).acquire('queue:own', { waitTimeoutMs: patience });
    const ownWaiter = app.locks.acquire('queue:own', { waitTimeoutMs: patience });
    const { page, problems } = await open(`${app.origin}/locks/`);
    await untilKeys(page, (k) => k.join() === 'queue:fair,queue:own', 'both locks');
    await until(
      async () => (await row(page, 'queue:fair').innerText()).includes('1 (1 writer, 0 readers'),
      15_000,
      'the fair waiter',
    );
    await until(
      async () => /2 \(2 writers, 0 readers\); oldest .*, this instance/.test(await row(page, 'queue:own').innerText()),
      15_000,
      'the waiters of queue:own',
    );
    for (const key of ['queue:fair', 'queue:own']) {
      await until(
        async () => (await row(page, key).getAttribute('class'))?.includes('alarm') === true,
        15_000,
        `${key} highlighted`,
      );
      expect(await row(page, key).locator('.badge').innerText()).toBe('waiting > 1.5 s');
    }
    expect(await row(page, 'queue:fair').innerText()).toMatch(/oldest [\d.]+ s, fair queue/);
    expect(await page.locator('#summary').innerText()).toContain('2 flagged by the deadlock alarm');
    await blocker.release();
    // Either waiter may get the lock first: each gives it back as soon as it has it (awaiting one before releasing the
    // other deadlocked the test whenever the other won: it then timed out after waitTimeoutMs).
    await Promise.all([ownWait, ownWaiter].map(async (waiting) => (await waiting).release()));
    owner.send({ type: 'release' });
    await fairWaiter.next('held');
    fairWaiter.send({ type: 'release' });
    await fairWaiter.next('released');
    expect(problems).toEqual([]);
  }, 90_000);

  it('filters by key prefix, keeps the filter in the address, and says how many more there are past maxKeys', async () => {
    const app = await board({ board: { maxKeys: 3 } });
    const handles = await Promise.all(
      ['article:1', 'article:2', 'article:3', 'article:4', 'user:1'].map((k) => app.locks.acquire(k)),
    );
    const { page, problems } = await open(`${app.origin}/locks`);
    await untilKeys(page, (k) => k.join() === 'article:1,article:2,article:3', 'the first three keys');
    expect(await page.locator('#summary').innerText()).toContain('2 more, narrow the filter');
    await page.locator('#filter').fill('user:');
    await untilKeys(page, (k) => k.join() === 'user:1', 'the filtered keys');
    expect(page.url()).toBe(`${app.origin}/locks/index.html?filter=user%3A`);
    // The prefix and the filter as the application writes keys, without the hash-tag brace of the Redis keys.
    const prefix = app.locks.engine.settings.keyPrefix;
    expect(await page.locator('#locks-caption').innerText()).toBe(
      `Held locks under ${prefix} whose key starts with user:`,
    );
    await page.locator('#filter').fill('article:');
    await untilKeys(page, (k) => k.join() === 'article:1,article:2,article:3', 'article keys');
    await page.reload();
    expect(await page.locator('#filter').inputValue()).toBe('article:');
    await untilKeys(page, (k) => k.length === 3, 'the filter kept across a reload');
    await Promise.all(handles.map((h) => h.release()));
    expect(problems).toEqual([]);
  }, 90_000);

  it('highlights a lock held longer than holdWarningMs (badge and alarm colour), and not one held for less', async () => {
    const app = await board({ lockOptions: { holdWarningMs: 3_000, waitWarningMs: 0 } });
    const old = await app.locks.acquire('hold:old', { leaseMs: 30_000 });
    const { page, problems } = await open(`${app.origin}/locks`);
    await until(
      async () => (await row(page, 'hold:old').getAttribute('class'))?.includes('alarm') === true,
      15_000,
      'hold:old highlighted',
    );
    expect(await row(page, 'hold:old').locator('.badge').innerText()).toBe('held > 3.0 s');
    // The highlight is visible: the alarm background of board.css, not the plain one.
    const background = (key: string) =>
      row(page, key)
        .locator('td')
        .first()
        .evaluate((td) => (globalThis as any).getComputedStyle(td).backgroundColor as string);
    expect(await background('hold:old')).toBe('rgb(255, 241, 229)');
    // A lock taken now is shown (within a refresh or two, well under 3 s) without the highlight.
    const fresh = await app.locks.acquire('hold:new', { leaseMs: 30_000 });
    await untilKeys(page, (k) => k.join() === 'hold:new,hold:old', 'both locks');
    expect(await row(page, 'hold:new').getAttribute('class')).not.toContain('alarm');
    expect(await row(page, 'hold:new').locator('.badge').count()).toBe(0);
    expect(await background('hold:new')).not.toBe('rgb(255, 241, 229)');
    expect(await page.locator('#summary').innerText()).toContain('1 flagged by the deadlock alarm');
    await Promise.all([old.release(), fresh.release()]);
    expect(problems).toEqual([]);
  }, 90_000);

  it('labels each recent event with the host and pid of the instance that saw it, and says which instance answered', async () => {
    const app = await board();
    const { page, problems } = await open(`${app.origin}/locks`);
    const lock = await app.locks.acquire('event:1');
    await lock.release();
    const label = ` · seen by ${hostname()} pid ${process.pid}`;
    let items: string[] = [];
    await until(
      async () =>
        (items = await page.locator('#events li').allInnerTexts()).some((t) => t.includes('released event:1')),
      15_000,
      'the released event',
    );
    const acquired = items.find((t) => t.includes('acquired event:1'));
    const released = items.find((t) => t.includes('released event:1'));
    expect(acquired).toMatch(
      new RegExp(
        `^\\S.* acquired event:1 \\(write\\) by \\S+, waited \\d+ ms${label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`,
      ),
    );
    expect(released).toMatch(/^\S.* released event:1 \(write\) by \S+, held \d+ ms · seen by /);
    expect(released!.endsWith(label)).toBe(true);
    expect(await page.locator('#instance').innerText()).toBe(
      `Answered by ${hostname()} pid ${process.pid} (${app.locks.engine.settings.appName})`,
    );
    expect(problems).toEqual([]);
  }, 90_000);
});

describe.each(['express', 'fastify'] as const)('lock board page under a Content-Security-Policy on %s', (platform) => {
  it('renders a key made of markup as text, under helmet’s default Content-Security-Policy', async () => {
    const xss = '<img src=x onerror=alert(1)>';
    const app = await board({ platform, configure: (a) => void a.use(helmet()) });
    const lock = await app.locks.acquire(xss);
    const { page, problems } = await open(`${app.origin}/locks`);
    await untilKeys(page, (k) => k.join() === xss, 'the markup key');
    expect(await row(page, xss).locator('.key').innerText()).toBe(xss);
    expect(await page.locator('img').count()).toBe(0);
    await row(page, xss).getByRole('button').click();
    await page.locator('#detail-title').waitFor();
    await until(async () => (await page.locator('#detail-rows tr').count()) === 1, 10_000, 'the detail view');
    expect(await page.locator('#detail-title').innerText()).toBe(`lock ${xss}`);
    expect(await page.locator('img').count()).toBe(0);
    const csp = (await page.request.get(`${app.origin}/locks/index.html`)).headers()['content-security-policy'];
    // helmet's policy is the one in force (the board does not replace an application's own).
    expect(csp).toContain("script-src-attr 'none'");
    await lock.release();
    expect(problems).toEqual([]);
  }, 90_000);

  it('works under a strict CSP of its own when the application sets none: every part comes from its own files', async () => {
    const app = await board({ platform });
    const lock = await app.locks.acquire('csp:1');
    const { page, problems } = await open(`${app.origin}/locks`);
    const csp = (await page.request.get(`${app.origin}/locks/index.html`)).headers()['content-security-policy'];
    expect(csp).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    await untilKeys(page, (k) => k.join() === 'csp:1', 'the lock');
    // The style sheet applied (a rule of board.css), so it was not blocked.
    expect(
      await page
        .locator('th')
        .first()
        .evaluate((th) => (globalThis as any).getComputedStyle(th).fontWeight),
    ).toBe('600');
    await lock.release();
    expect(problems).toEqual([]);
  }, 90_000);
});

describe('lock board on a Redis Cluster', () => {
  it('scans every master: locks on keys spread over the 3 masters all appear, on the page and in the JSON', async () => {
    const cluster = await RedisCluster.start(kit);
    const client = cluster.client();
    const keyPrefix = uniquePrefix('board');
    const app = await board({ redis: client, keyPrefix });
    const keys = Array.from({ length: 12 }, (_, i) => `spread:${String(i).padStart(2, '0')}`);
    const handles = await Promise.all(keys.map((k) => app.locks.acquire(k)));
    const masters = new Set(
      await Promise.all(keys.map(async (k) => (await cluster.masterFor(`${keyPrefix}{${k}}`)).port)),
    );
    expect(masters.size).toBe(3);
    const snapshot = (await (await fetch(`${app.origin}/locks/api/snapshot`)).json()) as BoardSnapshot;
    expect({
      keys: snapshot.entries.map((e) => e.key),
      complete: snapshot.complete,
      failures: snapshot.failures,
    }).toEqual({ keys, complete: true, failures: [] });
    const { page, problems } = await open(`${app.origin}/locks`);
    await untilKeys(page, (k) => k.join() === keys.join(), 'every lock of every master');
    await Promise.all(handles.map((h) => h.release()));
    await untilKeys(page, (k) => k.length === 0, 'the locks to disappear');
    expect(problems).toEqual([]);
  }, 120_000);
});
