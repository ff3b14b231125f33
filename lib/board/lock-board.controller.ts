import { Body, Controller, Get, Post, Query, Req, Res, UseGuards, VERSION_NEUTRAL } from '@nestjs/common';
import type { Type } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { BOARD_CSS } from './assets/board-style.js';
import { BOARD_HTML, BOARD_ICON } from './assets/board-page.js';
import { BOARD_JS } from './assets/board-script.js';
import { crossSiteRefusal, describeRequest } from './board-requests.js';
import type { BoardRequest } from './board-requests.js';
import type { LockBoardGuard } from './lock-board-options.js';
import { LockBoardService } from './lock-board.service.js';
import { errorText } from '../common/error-text.js';

/**
 * The policy the page is served with when the application set none (helmet's, or its own, is left alone): its own
 * files only, no inline script or style, no framing.
 */
export const BOARD_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

type AnyResponse = { getHeader?: (name: string) => unknown };

/**
 * The board's routes as a real Nest controller at `path` (so global prefix, global guards, interceptors and filters
 * apply), with `guards` on every route. A class per module instance, since a controller's path is fixed when its
 * class is decorated. Bodies are sent through the HTTP adapter (Express or Fastify), so an interceptor that wraps
 * responses cannot break the page; it still runs.
 */
export function lockBoardController(path: string, guards: readonly LockBoardGuard[]): Type {
  const last = path.split('/').pop() as string;

  @Controller({ path, version: VERSION_NEUTRAL })
  @UseGuards(...guards)
  class LockBoardController {
    constructor(
      private readonly board: LockBoardService,
      private readonly http: HttpAdapterHost,
    ) {}

    /** `…/locks` and `…/locks/`: on to the page, by a relative redirect (it keeps any prefix a proxy added). */
    @Get()
    root(@Req() req: BoardRequest, @Res() res: unknown): void {
      const url = String(this.http.httpAdapter.getRequestUrl(req)).split('?')[0];
      this.http.httpAdapter.redirect(res, 302, url.endsWith('/') ? 'index.html' : `${last}/index.html`);
    }

    @Get('index.html')
    page(@Res() res: unknown): void {
      if ((res as AnyResponse).getHeader?.('content-security-policy') === undefined)
        this.header(res, 'Content-Security-Policy', BOARD_CSP);
      this.send(res, 200, 'text/html; charset=utf-8', BOARD_HTML);
    }

    @Get('board.js')
    script(@Res() res: unknown): void {
      this.send(res, 200, 'text/javascript; charset=utf-8', BOARD_JS);
    }

    @Get('favicon.svg')
    icon(@Res() res: unknown): void {
      this.send(res, 200, 'image/svg+xml', BOARD_ICON);
    }

    @Get('board.css')
    style(@Res() res: unknown): void {
      this.send(res, 200, 'text/css; charset=utf-8', BOARD_CSS);
    }

    /**
     * What the page shows: the shared snapshot, this instance's recent events and the board's settings. 503 when Redis
     * cannot be read.
     */
    @Get('api/view')
    async view(@Query('filter') filter: unknown, @Res() res: unknown): Promise<void> {
      let view;
      try {
        view = await this.board.view(text(filter));
      } catch (err) {
        return this.unreadable(res, err);
      }
      this.json(res, view.snapshot.error ? 503 : 200, view);
    }

    /** The shared snapshot (for dashboards). 503 when Redis cannot be read. */
    @Get('api/snapshot')
    async snapshot(@Query('filter') filter: unknown, @Res() res: unknown): Promise<void> {
      let snapshot;
      try {
        snapshot = await this.board.snapshot(text(filter));
      } catch (err) {
        return this.unreadable(res, err);
      }
      this.json(res, snapshot.error ? 503 : 200, snapshot);
    }

    @Get('api/events')
    events(@Res() res: unknown): void {
      this.json(res, 200, { instance: this.board.instance(), events: this.board.recentEvents() });
    }

    /** One key, read now: `{ entry }` (`null` when not held). */
    @Get('api/detail')
    async detail(@Query('kind') kind: unknown, @Query('key') key: unknown, @Res() res: unknown): Promise<void> {
      if (typeof key !== 'string' || key === '')
        return this.json(res, 400, { error: 'query parameter key is required' });
      try {
        this.json(res, 200, { entry: await this.board.detail(text(kind) || 'lock', key) });
      } catch (err) {
        this.json(res, 503, { error: (err as Error).message });
      }
    }

    /** Force release: POST `{ kind, key, scope? }` with `X-Lock-Board: force-release`, from the page's origin. */
    @Post('api/force-release')
    async forceRelease(@Req() req: BoardRequest, @Body() body: unknown, @Res() res: unknown): Promise<void> {
      const refusal = crossSiteRefusal(req);
      if (refusal) return this.json(res, 403, { error: refusal });
      const b = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
      try {
        const outcome = await this.board.forceRelease(
          text(b.kind) || 'lock',
          b.key,
          typeof b.scope === 'string' ? b.scope : undefined,
          describeRequest(req),
        );
        if (outcome.ok) this.json(res, 200, { released: outcome.held });
        else this.json(res, outcome.status, { error: outcome.message });
      } catch (err) {
        this.json(res, 503, { error: (err as Error).message });
      }
    }

    /**
     * A snapshot that failed outright (not a failure the snapshot reports itself): 503 with the reason, never a bare
     * 500.
     */
    private unreadable(res: unknown, err: unknown): void {
      this.json(res, 503, {
        error: `the lock board cannot read Redis: ${errorText(err)}`,
      });
    }

    private header(res: unknown, name: string, value: string): void {
      this.http.httpAdapter.setHeader(res, name, value);
    }

    private send(res: unknown, status: number, type: string, body: string): void {
      this.header(res, 'Content-Type', type);
      this.header(res, 'Cache-Control', 'no-cache');
      this.header(res, 'X-Content-Type-Options', 'nosniff');
      this.header(res, 'Referrer-Policy', 'no-referrer');
      this.http.httpAdapter.reply(res, body, status);
    }

    private json(res: unknown, status: number, body: unknown): void {
      this.header(res, 'Cache-Control', 'no-store');
      this.header(res, 'X-Content-Type-Options', 'nosniff');
      this.http.httpAdapter.reply(res, body, status);
    }
  }
  return LockBoardController;
}

/** A query or body value as text (`''` when absent or not a string). */
function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}
