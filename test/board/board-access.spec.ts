// The lock board's access rules and deployment shapes, in a real browser: force release (off, on with confirmation,
// refused cross-site), guards on the page and the JSON, a path-prefixing proxy with a global prefix, Redis down, and
// the Fastify adapter.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { AddressInfo } from 'node:net';
import { ForbiddenException, Injectable, Module, UnauthorizedException } from '@nestjs/common';
import type { CallHandler, CanActivate, ExecutionContext, LoggerService, NestInterceptor } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { map } from 'rxjs';
import type { Observable } from 'rxjs';
import type { Browser, Page } from 'playwright-core';
import type { LockBoardForceRelease } from '../../lib/board/lock-board-options.js';
import { LockBoardModule } from '../../lib/board/lock-board.module.js';
import { LockBoardService } from '../../lib/board/lock-board.service.js';
import { RedisLockModule } from '../../lib/nest/redis-lock.module.js';
import { launchChromium, otherOrigin, pathPrefixProxy, startBoardApp } from '../support/board-kit.js';
import type { BoardApp, BoardAppOptions } from '../support/board-kit.js';
import { until } from '../support/async.js';
import { LockTestKit } from '../support/lock-test-kit.js';
import { redisUrl, uniquePrefix } from '../support/redis.js';
import { WorkerProcess } from '../support/worker-process.js';
import { startRedisServer } from '../../tools/redis-server.mjs';

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

async function open(url: string, headers?: Record<string, string>): Promise<Page> {
  const context = await browser.newContext({ extraHTTPHeaders: headers });
  kit.add(() => context.close());
  const page = await context.newPage();
  await page.goto(url);
  return page;
}

function keysShown(page: Page): Promise<string[]> {
  return page.locator('#rows tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-key') ?? ''));
}

async function untilKeys(page: Page, check: (keys: string[]) => boolean, what: string): Promise<void> {
  let keys: string[] = [];
  await until(
    async () => check((keys = await keysShown(page))),
    15_000,
    `${what} (table shows ${JSON.stringify(keys)})`,
  );
}

async function holder(prefix: string, key: string, redis = redisUrl()): Promise<WorkerProcess> {
  const worker = WorkerProcess.start(kit, {
    kind: 'wait',
    redis,
    prefix,
    key,
    mode: 'write',
    fair: false,
    waitTimeoutMs: 10_000,
  });
  await worker.next('held', 20_000);
  return worker;
}

/** Lets in requests with `Authorization: Bearer <token>`; 401 otherwise. */
class TokenGuard implements CanActivate {
  constructor(private readonly token: string) {}
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined>; user?: unknown }>();
    if (req.headers.authorization !== `Bearer ${this.token}`) throw new UnauthorizedException();
    req.user = { username: 'oncall' };
    return true;
  }
}

const POST_FROM_PAGE = (key: string) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', 'x-lock-board': 'force-release' },
  body: JSON.stringify({ kind: 'lock', key }),
});

describe('lock board access', () => {
  it('is read-only by default: no release button, and the action answers 403 even with the header', async () => {
    const app = await board();
    const lock = await app.locks.acquire('ro:1');
    const page = await open(`${app.origin}/locks`);
    await untilKeys(page, (k) => k.join() === 'ro:1', 'the lock');
    await page.getByRole('button', { name: 'Details of lock ro:1' }).click();
    await until(async () => (await page.locator('#detail-rows tr').count()) === 1, 10_000, 'the detail view');
    expect(await page.locator('#release').isVisible()).toBe(false);
    const answer = await page.evaluate(async (init) => {
      const res = await fetch('api/force-release', init);
      return { status: res.status, body: await res.text() };
    }, POST_FROM_PAGE('ro:1'));
    expect(answer.status).toBe(403);
    expect(answer.body).toContain('allowForceRelease');
    expect(await app.locks.inspect('ro:1')).not.toBeNull();
    await lock.release();
  }, 90_000);

  it('with allowForceRelease, frees a lock of another process after confirmation, logs it with the request and reports it', async () => {
    const reports: LockBoardForceRelease[] = [];
    const app = await board({
      board: {
        allowForceRelease: true,
        guards: [new TokenGuard('s3cret')],
        onForceRelease: (e) => void reports.push(e),
      },
    });
    const prefix = app.locks.engine.settings.keyPrefix;
    const owner = await holder(prefix, 'stuck:9');
    const page = await open(`${app.origin}/locks`, { authorization: 'Bearer s3cret' });
    await untilKeys(page, (k) => k.join() === 'stuck:9', 'the lock');
    await page.getByRole('button', { name: 'Details of lock stuck:9' }).click();
    await page.locator('#release').waitFor({ state: 'visible' });
    // Cancel first: nothing happens.
    await page.locator('#release').click();
    await page.locator('#confirm').waitFor({ state: 'visible' });
    expect(await page.locator('#confirm-text').innerText()).toContain('"stuck:9"');
    await page.locator('#confirm-cancel').click();
    await page.locator('#confirm').waitFor({ state: 'hidden' });
    expect(await app.locks.inspect('stuck:9')).not.toBeNull();
    // Then confirm.
    await page.locator('#release').click();
    await page.locator('#confirm-release').click();
    await until(
      async () => (await page.locator('#action-result').innerText()) === 'Released "stuck:9".',
      10_000,
      'the result',
    );
    expect(await app.locks.inspect('stuck:9')).toBeNull();
    await untilKeys(page, (k) => k.length === 0, 'the lock to disappear');
    await until(() => reports.length === 1, 5_000, 'onForceRelease');
    expect(reports[0]).toMatchObject({
      kind: 'lock',
      key: 'stuck:9',
      held: true,
      request: { method: 'POST', url: '/locks/api/force-release', ip: '127.0.0.1', user: 'oncall' },
    });
    expect(reports[0].request.userAgent).toContain('Chrome');
    await until(
      async () => (await page.locator('#events').innerText()).includes('force-released stuck:9'),
      10_000,
      'the event in the list',
    );
    owner.send({ type: 'release' });
    await owner.next('released');
  }, 90_000);

  it("lists a semaphore of two other processes (permits used/limit, each holder) and frees one holder's permit, then all", async () => {
    const app = await board({ board: { allowForceRelease: true } });
    const prefix = app.locks.engine.settings.keyPrefix;
    const permit = () =>
      WorkerProcess.start(kit, {
        kind: 'permit',
        redis: redisUrl(),
        prefix,
        key: 'exports',
        limit: 3,
        leaseMs: 30_000,
        fair: false,
        waitTimeoutMs: 10_000,
      });
    const [one, two] = [permit(), permit()];
    await Promise.all([one.next('held', 20_000), two.next('held', 20_000)]);
    const page = await open(`${app.origin}/locks`);
    await untilKeys(page, (k) => k.join() === 'exports', 'the semaphore');
    const row = page.locator('#rows tr[data-key="exports"]');
    await until(
      async () => /semaphore[\s\S]*permits 2\/3/.test(await row.innerText()),
      10_000,
      'kind and permits in the row',
    );
    await page.getByRole('button', { name: 'Details of semaphore exports' }).click();
    await until(
      async () => (await page.locator('#detail-rows tr').count()) === 2,
      10_000,
      'both holders in the detail view',
    );
    const holders = (await app.locks.inspectPermits('exports'))!.holders;
    expect(new Set(holders.map((h) => h.pid)).size).toBe(2);
    // One holder: its own button, confirmed.
    const target = holders[0];
    await page.locator(`#detail-rows button.release-one[data-owner="${target.owner}"]`).click();
    expect(await page.locator('#confirm-text').innerText()).toContain(`permit of ${target.owner}`);
    await page.locator('#confirm-release').click();
    await until(async () => (await app.locks.inspectPermits('exports'))?.used === 1, 10_000, 'one permit freed');
    expect((await app.locks.inspectPermits('exports'))!.holders.map((h) => h.owner)).toEqual([holders[1].owner]);
    // Then every permit.
    await until(
      async () => (await page.locator('#release').innerText()) === 'Force release every permit',
      10_000,
      'the release-all button',
    );
    await page.locator('#release').click();
    await page.locator('#confirm-release').click();
    await until(async () => (await app.locks.inspectPermits('exports')) === null, 10_000, 'every permit freed');
    await untilKeys(page, (k) => k.length === 0, 'the semaphore to disappear');
    // The workers are killed by the kit; their permits are gone already.
  }, 90_000);

  it('logs each force release as a warning of the LockBoard context naming the key and the request', async () => {
    const lines: { level: string; message: string; context: string }[] = [];
    const record = (level: string) => (message: unknown, context?: unknown) =>
      void lines.push({ level, message: String(message), context: String(context) });
    const logger: LoggerService = {
      log: record('log'),
      warn: record('warn'),
      error: record('error'),
      debug: record('debug'),
      verbose: record('verbose'),
    };
    const app = await board({ logger, board: { allowForceRelease: true, guards: [new TokenGuard('aud1t')] } });
    const lock = await app.locks.acquire('audit:1');
    const res = await fetch(`${app.origin}/locks/api/force-release?from=test`, {
      ...POST_FROM_PAGE('audit:1'),
      headers: { ...POST_FROM_PAGE('').headers, authorization: 'Bearer aud1t', 'user-agent': 'audit-test/1.0' },
    });
    expect(res.status).toBe(200);
    const audit = lines.filter((l) => l.context === 'LockBoard');
    expect(audit).toEqual([
      {
        level: 'warn',
        context: 'LockBoard',
        message:
          'force release of lock "audit:1" (it was held: holders lose it at their next renewal) by POST /locks/api/force-release?from=test user oncall from 127.0.0.1, user agent "audit-test/1.0"',
      },
    ]);
    await until(() => !lock.isHeld, 15_000, 'the holder to find out');
  }, 90_000);

  it('works behind a proxy that strips a path prefix, under the application’s global prefix', async () => {
    const app = await board({ globalPrefix: 'api', board: { path: 'admin/locks' } });
    const lock = await app.locks.acquire('proxied:1');
    const proxy = await pathPrefixProxy(app.origin, '/ops');
    kit.add(() => proxy.close());
    const page = await open(`${proxy.origin}/ops/api/admin/locks`);
    expect(page.url()).toBe(`${proxy.origin}/ops/api/admin/locks/index.html`);
    await untilKeys(page, (k) => k.join() === 'proxied:1', 'the lock through the proxy');
    await page.getByRole('button', { name: 'Details of lock proxied:1' }).click();
    await until(
      async () => (await page.locator('#detail-rows tr').count()) === 1,
      10_000,
      'the detail view through the proxy',
    );
    expect((await fetch(`${app.origin}/admin/locks/index.html`)).status).toBe(404);
    await lock.release();
  }, 90_000);

  it('shows that Redis cannot be reached instead of an empty table, and recovers when it is back', async () => {
    const server = await kit.server();
    const app = await board({ redis: server.url, lockOptions: { commandTimeoutMs: 500 } });
    const lock = await app.locks.acquire('down:1', { leaseMs: 60_000 });
    const page = await open(`${app.origin}/locks`);
    await untilKeys(page, (k) => k.join() === 'down:1', 'the lock');
    await server.stop();
    await page.locator('#error').waitFor({ state: 'visible', timeout: 20_000 });
    expect(await page.locator('#error').innerText()).toMatch(/^Redis cannot be reached: /);
    // Said once, not twice (the snapshot's own error already says it).
    expect(await page.locator('#error').innerText()).not.toMatch(/cannot be reached: Redis cannot be reached/);
    expect(await page.locator('#empty').isVisible()).toBe(false);
    const again = await startRedisServer({ port: server.port });
    kit.add(() => again.stop());
    await page.locator('#error').waitFor({ state: 'hidden', timeout: 20_000 });
    await lock.release().catch(() => false);
  }, 90_000);

  it('runs on the Fastify adapter: page, holders and force release', async () => {
    const app = await board({ platform: 'fastify', board: { allowForceRelease: true } });
    const prefix = app.locks.engine.settings.keyPrefix;
    const owner = await holder(prefix, 'fast:1');
    const page = await open(`${app.origin}/locks`);
    expect(page.url()).toBe(`${app.origin}/locks/index.html`);
    await untilKeys(page, (k) => k.join() === 'fast:1', 'the lock');
    expect(await page.locator('#rows').innerText()).toContain(`pid ${owner.pid}`);
    await page.getByRole('button', { name: 'Details of lock fast:1' }).click();
    await page.locator('#release').click();
    await page.locator('#confirm-release').click();
    await untilKeys(page, (k) => k.length === 0, 'the lock to disappear');
    expect(await app.locks.inspect('fast:1')).toBeNull();
    owner.send({ type: 'release' });
    await owner.next('released');
  }, 90_000);
});

describe.each(['express', 'fastify'] as const)('lock board access on %s', (platform) => {
  it('refuses a cross-site force release: a form post, and a fetch from another origin even when CORS lets it through', async () => {
    const app = await board({
      platform,
      board: { allowForceRelease: true },
      configure: (a) => a.enableCors({ origin: true, allowedHeaders: ['content-type', 'x-lock-board'] }),
    });
    const lock = await app.locks.acquire('victim:1');
    const target = `${app.origin}/locks/api/force-release`;
    const evil = await otherOrigin('<!doctype html><title>evil</title>');
    kit.add(() => evil.close());
    const page = await open(`${evil.origin}/`);
    // A fetch with the custom header: CORS (enabled by the app) lets it through; Sec-Fetch-Site says cross-site.
    const fetched = await page.evaluate(
      async ([url, init]) => {
        const res = await fetch(url, init);
        return { status: res.status, body: await res.text() };
      },
      [target, POST_FROM_PAGE('victim:1')] as const,
    );
    expect(fetched.status).toBe(403);
    // Another port of the same host is another origin of the same site: refused all the same.
    expect(fetched.body).toMatch(/cross-site request refused \(Sec-Fetch-Site: (cross|same)-site\)/);
    // A plain form post (no custom header possible).
    const form = await page.evaluate(
      async ([url]) => {
        const res = await fetch(url, {
          method: 'POST',
          mode: 'no-cors',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: 'kind=lock&key=victim%3A1',
        });
        return res.type;
      },
      [target] as const,
    );
    expect(form).toBe('opaque');
    // Without a browser's headers but with a foreign Origin.
    const forged = await fetch(target, {
      ...POST_FROM_PAGE('victim:1'),
      headers: { ...POST_FROM_PAGE('').headers, origin: 'http://evil.example' },
    });
    expect(forged.status).toBe(403);
    expect(await app.locks.inspect('victim:1')).not.toBeNull();
    await lock.release();
  }, 90_000);

  it('keeps anonymous requests out of the page, its files and the JSON (board guards: 401; global guards: 403)', async () => {
    const denyAll: CanActivate = {
      canActivate: (context: ExecutionContext) => {
        const req = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>();
        if (req.headers['x-global'] !== 'yes') throw new ForbiddenException('global guard');
        return true;
      },
    };
    const app = await board({
      platform,
      board: { allowForceRelease: true, guards: [new TokenGuard('t0k')] },
      globalGuards: [denyAll],
    });
    const paths = [
      'locks',
      'locks/index.html',
      'locks/board.js',
      'locks/board.css',
      'locks/api/view',
      'locks/api/snapshot',
      'locks/api/events',
      'locks/api/detail?key=a',
    ];
    for (const path of paths) {
      expect([
        path,
        (await fetch(`${app.origin}/${path}`, { redirect: 'manual', headers: { 'x-global': 'yes' } })).status,
      ]).toEqual([path, 401]);
      expect([
        path,
        (await fetch(`${app.origin}/${path}`, { redirect: 'manual', headers: { authorization: 'Bearer t0k' } })).status,
      ]).toEqual([path, 403]);
      const ok = await fetch(`${app.origin}/${path}`, {
        redirect: 'manual',
        headers: { authorization: 'Bearer t0k', 'x-global': 'yes' },
      });
      expect([path, ok.status]).toEqual([path, path === 'locks' ? 302 : 200]);
    }
    const post = await fetch(`${app.origin}/locks/api/force-release`, {
      ...POST_FROM_PAGE('a'),
      headers: { ...POST_FROM_PAGE('a').headers, 'x-global': 'yes' },
    });
    expect(post.status).toBe(401);
    // The page of an anonymous browser says so instead of showing an empty table.
    const page = await open(`${app.origin}/locks/index.html`, { 'x-global': 'yes' });
    expect(await page.locator('body').innerText()).not.toContain('Locks');
  }, 90_000);
});

/** What the application's own modules provide: the admin token a class guard reads through DI. */
@Injectable()
class AdminTokens {
  readonly token = 'cl4ss-t0ken';
}

@Module({ providers: [AdminTokens], exports: [AdminTokens] })
class AdminModule {}

/** A guard given as a class (`guards: [AdminGuard]`), its dependency injected by Nest. */
@Injectable()
class AdminGuard implements CanActivate {
  constructor(private readonly tokens: AdminTokens) {}
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>();
    if (req.headers.authorization !== `Bearer ${this.tokens.token}`)
      throw new UnauthorizedException('admin token needed');
    return true;
  }
}

const BOARD_CONFIG = Symbol('board config');

@Module({
  providers: [{ provide: BOARD_CONFIG, useValue: { actions: 'on', refreshMs: 250 } }],
  exports: [BOARD_CONFIG],
})
class BoardConfigModule {}

/** An application interceptor that records what it saw and wraps every handler's result (as some apps do). */
@Injectable()
class RecordingInterceptor implements NestInterceptor {
  readonly seen: string[] = [];
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = context.switchToHttp().getRequest<{ url: string }>();
    this.seen.push(req.url);
    context.switchToHttp().getResponse<{ setHeader(n: string, v: string): void }>().setHeader('x-intercepted', 'yes');
    return next.handle().pipe(map((data: unknown) => ({ wrapped: data })));
  }
}

describe('lock board as a part of the Nest application', () => {
  it('resolves guards given as classes through DI (their module in imports): 401 without the token, 200 with it', async () => {
    const app = await board({ board: { guards: [AdminGuard], imports: [AdminModule] } });
    const lock = await app.locks.acquire('guarded:1');
    for (const path of [
      'locks/index.html',
      'locks/board.js',
      'locks/api/view',
      'locks/api/snapshot',
      'locks/api/events',
      'locks/api/detail?key=guarded:1',
    ]) {
      expect([path, (await fetch(`${app.origin}/${path}`)).status]).toEqual([path, 401]);
      expect([
        path,
        (await fetch(`${app.origin}/${path}`, { headers: { authorization: 'Bearer cl4ss-t0ken' } })).status,
      ]).toEqual([path, 200]);
    }
    const page = await open(`${app.origin}/locks`, { authorization: 'Bearer cl4ss-t0ken' });
    await untilKeys(page, (k) => k.join() === 'guarded:1', 'the lock behind the class guard');
    await lock.release();
  }, 90_000);

  it('takes its settings from forRootAsync at start-up (inject from an imported module), and rejects a bad one naming it', async () => {
    const app = await board({
      boardModule: LockBoardModule.forRootAsync({
        path: 'ops/locks',
        guards: [AdminGuard],
        imports: [AdminModule, BoardConfigModule],
        inject: [BOARD_CONFIG],
        useFactory: async (config: { actions: string; refreshMs: number }) => ({
          allowForceRelease: config.actions === 'on',
          refreshMs: config.refreshMs,
        }),
      }),
    });
    const lock = await app.locks.acquire('async:1');
    const auth = { authorization: 'Bearer cl4ss-t0ken' };
    expect((await fetch(`${app.origin}/ops/locks/api/view`)).status).toBe(401);
    const view = (await (await fetch(`${app.origin}/ops/locks/api/view`, { headers: auth })).json()) as {
      allowForceRelease: boolean;
      refreshMs: number;
    };
    expect({ allowForceRelease: view.allowForceRelease, refreshMs: view.refreshMs }).toEqual({
      allowForceRelease: true,
      refreshMs: 250,
    });
    const released = await fetch(`${app.origin}/ops/locks/api/force-release`, {
      ...POST_FROM_PAGE('async:1'),
      headers: { ...POST_FROM_PAGE('').headers, ...auth },
    });
    expect([released.status, await released.json()]).toEqual([200, { released: true }]);
    expect(await app.locks.inspect('async:1')).toBeNull();
    await lock.release().catch(() => false);
    await expect(
      Test.createTestingModule({
        imports: [LockBoardModule.forRootAsync({ useFactory: () => ({ refreshMs: 5 }) })],
      }).compile(),
    ).rejects.toThrow('invalid refreshMs: 5; expected an integer from 100 to 600000');
  }, 90_000);

  it("runs the application's interceptors on its routes, and a wrapping interceptor breaks neither the page nor the JSON", async () => {
    const interceptor = new RecordingInterceptor();
    const app = await board({ configure: (a) => void a.useGlobalInterceptors(interceptor) });
    const lock = await app.locks.acquire('intercepted:1');
    const page = await open(`${app.origin}/locks`);
    await untilKeys(page, (k) => k.join() === 'intercepted:1', 'the lock');
    for (const path of ['index.html', 'board.js', 'api/view', 'api/snapshot']) {
      const res = await fetch(`${app.origin}/locks/${path}`);
      expect([path, res.status, res.headers.get('x-intercepted')]).toEqual([path, 200, 'yes']);
    }
    const snapshot = (await (await fetch(`${app.origin}/locks/api/snapshot`)).json()) as {
      entries?: { key: string }[];
    };
    expect(snapshot.entries?.map((e) => e.key)).toEqual(['intercepted:1']);
    expect(interceptor.seen).toEqual(
      expect.arrayContaining(['/locks/index.html', '/locks/board.js', '/locks/board.css', '/locks/api/view?filter=']),
    );
    await lock.release();
  }, 90_000);

  it("stays out of the global prefix when the application excludes its path (setGlobalPrefix('api', { exclude }))", async () => {
    const app = await board({ globalPrefix: 'api', globalPrefixExclude: ['locks', 'locks/*path'] });
    const lock = await app.locks.acquire('excluded:1');
    expect((await fetch(`${app.origin}/api/locks/index.html`)).status).toBe(404);
    expect((await fetch(`${app.origin}/api/ping`)).status).toBe(200);
    const page = await open(`${app.origin}/locks`);
    expect(page.url()).toBe(`${app.origin}/locks/index.html`);
    await untilKeys(page, (k) => k.join() === 'excluded:1', 'the lock outside the prefix');
    await lock.release();
  }, 90_000);

  it('answers 503 with the reason in JSON, not a bare 500, when a snapshot fails outright', async () => {
    // The scan reports what Redis refuses in the snapshot; this is the last resort for anything else that rejects
    // (a fault of the board itself): the service below fails the way it would, the routes are the real ones.
    class FailingBoard extends LockBoardService {
      override view(): Promise<never> {
        return Promise.reject(new Error("READONLY You can't write against a read only replica."));
      }
      override snapshot(): Promise<never> {
        return Promise.reject(new Error('ERR unexpected reply'));
      }
    }
    const moduleRef = await Test.createTestingModule({
      imports: [
        RedisLockModule.forRoot({ redis: redisUrl(), keyPrefix: uniquePrefix('board'), isGlobal: true }),
        LockBoardModule.forRoot({}),
      ],
    })
      .overrideProvider(LockBoardService)
      .useClass(FailingBoard)
      .compile();
    const nest = moduleRef.createNestApplication({ logger: false });
    kit.add(() => nest.close());
    await nest.listen(0, '127.0.0.1');
    const origin = `http://127.0.0.1:${(nest.getHttpServer().address() as AddressInfo).port}`;
    for (const [path, reason] of [
      ['api/view', "READONLY You can't write against a read only replica."],
      ['api/snapshot', 'ERR unexpected reply'],
    ]) {
      const res = await fetch(`${origin}/locks/${path}`);
      expect([path, res.status, res.headers.get('content-type')?.split(';')[0], await res.json()]).toEqual([
        path,
        503,
        'application/json',
        { error: `the lock board cannot read Redis: ${reason}` },
      ]);
    }
  }, 90_000);
});
