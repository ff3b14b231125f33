import { UnauthorizedException } from '@nestjs/common';
import type { CanActivate, DynamicModule, ExecutionContext } from '@nestjs/common';
import { timingSafeEqual } from 'node:crypto';
import { LockBoardModule } from '../../lib/board/index.js';

/**
 * Lets in requests that carry the board token: `Authorization: Bearer <token>` (curl, dashboards) or HTTP Basic
 * with the token as password (a browser asks for it once). Anything else gets 401 with a Basic challenge.
 */
export class BoardTokenGuard implements CanActivate {
  private readonly token: Buffer;

  constructor(token: string) {
    this.token = Buffer.from(token);
  }

  canActivate(context: ExecutionContext): boolean {
    const http = context.switchToHttp();
    const header = String(http.getRequest<{ headers: Record<string, unknown> }>().headers.authorization ?? '');
    const [scheme, value = ''] = header.split(' ');
    let given = '';
    if (scheme === 'Bearer') given = value;
    else if (scheme === 'Basic') given = Buffer.from(value, 'base64').toString().split(':').slice(1).join(':');
    const candidate = Buffer.from(given);
    if (candidate.length === this.token.length && timingSafeEqual(candidate, this.token)) return true;
    http
      .getResponse<{ setHeader(name: string, value: string): void }>()
      .setHeader('WWW-Authenticate', 'Basic realm="lock board", charset="UTF-8"');
    throw new UnauthorizedException('the lock board needs the BOARD_TOKEN');
  }
}

/**
 * The lock board at /locks-board when BOARD_TOKEN is set (none: not mounted at all). BOARD_ACTIONS=on also allows
 * force release from the page; BOARD_SAMPLE_MS sets how often each instance samples its load for the charts.
 */
export function lockBoardFromEnv(env: NodeJS.ProcessEnv = process.env): DynamicModule[] {
  const token = env.BOARD_TOKEN;
  if (!token) return [];
  return [
    LockBoardModule.forRoot({
      path: 'locks-board',
      guards: [new BoardTokenGuard(token)],
      allowForceRelease: env.BOARD_ACTIONS === 'on',
      // How often each instance publishes its load for the charts (default 10 s).
      historySampleMs: env.BOARD_SAMPLE_MS ? Number(env.BOARD_SAMPLE_MS) : undefined,
    }),
  ];
}
