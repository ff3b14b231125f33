// The lock board under test: a real Nest application (Express or Fastify) listening on loopback with
// RedisLockModule and LockBoardModule, real Chromium (Debian's /usr/bin/chromium driven by playwright-core, never a
// downloaded browser), and a tiny path-prefixing reverse proxy.
import { existsSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Controller, Get, Module } from '@nestjs/common';
import type { CanActivate, DynamicModule, INestApplication, LoggerService } from '@nestjs/common';
import type { GlobalPrefixOptions } from '@nestjs/common/interfaces/index.js';
import { NestFactory } from '@nestjs/core';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';
import { LockBoardModule } from '../../lib/board/lock-board.module.js';
import type { LockBoardModuleOptions } from '../../lib/board/lock-board-options.js';
import { LockService } from '../../lib/nest/lock.service.js';
import { RedisLockModule } from '../../lib/nest/redis-lock.module.js';
import type { RedisLockModuleOptions } from '../../lib/nest/redis-lock-module-options.interface.js';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Chromium, headless. Fails (never skips) when it is not installed: CI installs it in .ci/run. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}: the lock board's browser tests need it (apt-get install chromium; .ci/run does)`,
    );
  }
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}

@Controller('ping')
class PingController {
  @Get()
  ping(): string {
    return 'pong';
  }
}

/** How `startBoardApp` builds the application. */
export interface BoardAppOptions {
  readonly redis: RedisLockModuleOptions['redis'];
  readonly keyPrefix: string;
  readonly lockOptions?: Partial<RedisLockModuleOptions>;
  readonly board?: LockBoardModuleOptions;
  /**
   * The board's module as the test declares it (e.g. `LockBoardModule.forRootAsync(...)`), instead of `forRoot(board)`.
   */
  readonly boardModule?: DynamicModule;
  /** Routes left out of the global prefix (default: the test's `ping`). */
  readonly globalPrefixExclude?: GlobalPrefixOptions['exclude'];
  /** A logger for the application (default none: `logger: false`). */
  readonly logger?: LoggerService;
  readonly platform?: 'express' | 'fastify';
  readonly globalPrefix?: string;
  readonly globalGuards?: readonly CanActivate[];
  /** Runs on the app before `listen` (helmet, CORS). */
  readonly configure?: (app: INestApplication) => void | Promise<void>;
}

/** A running board application. */
export interface BoardApp {
  readonly app: INestApplication;
  /** `http://127.0.0.1:<port>` */
  readonly origin: string;
  readonly locks: LockService;
  close(): Promise<void>;
}

/** Starts a Nest application with the lock module and the board, listening on a free loopback port. */
export async function startBoardApp(options: BoardAppOptions): Promise<BoardApp> {
  @Module({})
  class BoardTestModule {
    static create(): DynamicModule {
      return {
        module: BoardTestModule,
        imports: [
          RedisLockModule.forRoot({
            redis: options.redis,
            keyPrefix: options.keyPrefix,
            ...options.lockOptions,
            isGlobal: true,
          }),
          options.boardModule ?? LockBoardModule.forRoot(options.board ?? {}),
        ],
        controllers: [PingController],
      };
    }
  }
  let app: INestApplication;
  if (options.platform === 'fastify') {
    const { FastifyAdapter } = await import('@nestjs/platform-fastify');
    // Closing the app ends every connection, a keep-alive one whose response the test never read included: a full
    // suite once saw close() wait past a 30 s hook after a test that fetched the board's files without reading them.
    app = await NestFactory.create(BoardTestModule.create(), new FastifyAdapter({ forceCloseConnections: true }), {
      logger: options.logger ?? false,
      abortOnError: false,
    });
  } else {
    app = await NestFactory.create(BoardTestModule.create(), { logger: options.logger ?? false, abortOnError: false });
  }
  if (options.globalPrefix)
    app.setGlobalPrefix(options.globalPrefix, { exclude: options.globalPrefixExclude ?? ['ping'] });
  if (options.globalGuards) app.useGlobalGuards(...options.globalGuards);
  await options.configure?.(app);
  app.enableShutdownHooks();
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  return {
    app,
    origin: `http://127.0.0.1:${port}`,
    locks: app.get(LockService),
    close: () => app.close(),
  };
}

/** A reverse proxy on loopback that serves `target` under `prefix` (e.g. `/ops`) and strips it before forwarding. */
export async function pathPrefixProxy(
  target: string,
  prefix: string,
): Promise<{ readonly origin: string; close(): Promise<void> }> {
  const to = new URL(target);
  const server = createServer((req, res) => {
    const url = req.url ?? '/';
    if (!url.startsWith(`${prefix}/`)) {
      res.writeHead(404).end('not under the proxy prefix');
      return;
    }
    const upstream = request(
      {
        host: to.hostname,
        port: to.port,
        method: req.method,
        path: url.slice(prefix.length),
        headers: { ...req.headers, 'x-forwarded-prefix': prefix },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', (err) => res.writeHead(502).end(err.message));
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A bare HTTP server on another port (another origin) serving `html` at `/`. */
export async function otherOrigin(html: string): Promise<{ readonly origin: string; close(): Promise<void> }> {
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(html));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
