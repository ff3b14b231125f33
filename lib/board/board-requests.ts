import type { LockBoardForceRelease } from './lock-board-options.js';

/**
 * The header every action of the board must carry (a cross-site form cannot send it; a cross-origin script must ask
 * first).
 */
export const BOARD_ACTION_HEADER = 'x-lock-board';
/** Its value. */
export const BOARD_ACTION_VALUE = 'force-release';

/** What the board reads of a request, on Express and Fastify alike. */
export interface BoardRequest {
  readonly method?: string;
  readonly url?: string;
  readonly originalUrl?: string;
  readonly ip?: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly user?: unknown;
}

function header(req: BoardRequest, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Why an action request is refused as a possible cross-site request forgery, or `undefined` when it is acceptable:
 * it must carry `X-Lock-Board: force-release`, and come from the page's own origin: `Sec-Fetch-Site: same-origin`
 * when the browser sends that header, else an `Origin` whose host is the request's own `Host` (or the
 * `X-Forwarded-Host` a proxy set). A request with neither header is not from a browser (curl, a script) and is
 * accepted: forgery needs a browser that carries the victim's credentials.
 */
export function crossSiteRefusal(req: BoardRequest): string | undefined {
  if (header(req, BOARD_ACTION_HEADER) !== BOARD_ACTION_VALUE) {
    return `missing header ${BOARD_ACTION_HEADER}: ${BOARD_ACTION_VALUE} (actions are sent by the board's page, or by scripts that set it)`;
  }
  const site = header(req, 'sec-fetch-site');
  if (site !== undefined)
    return site === 'same-origin' ? undefined : `cross-site request refused (Sec-Fetch-Site: ${site})`;
  const origin = header(req, 'origin');
  if (origin === undefined) return undefined;
  let originHost: string;
  try {
    originHost = new URL(origin).host;
  } catch {
    return `cross-site request refused (Origin: ${origin})`;
  }
  const hosts = [header(req, 'host'), ...(header(req, 'x-forwarded-host') ?? '').split(',')]
    .map((h) => h?.trim())
    .filter(Boolean);
  return hosts.includes(originHost) ? undefined : `cross-site request refused (Origin ${origin} is not this host)`;
}

/** The request as the force-release log line and `onForceRelease` name it. */
export function describeRequest(req: BoardRequest): LockBoardForceRelease['request'] {
  return {
    method: req.method ?? 'POST',
    url: req.originalUrl ?? req.url ?? '',
    ip: req.ip ?? '',
    userAgent: header(req, 'user-agent') ?? '',
    user: describeUser(req.user),
  };
}

/** `request.user` as set by a guard (passport and the like): its id, username, name or email, or the string itself. */
function describeUser(user: unknown): string {
  if (typeof user === 'string') return user;
  if (user && typeof user === 'object') {
    const u = user as Record<string, unknown>;
    for (const field of ['username', 'email', 'name', 'id', 'sub']) {
      const v = u[field];
      if (typeof v === 'string' || typeof v === 'number') return String(v);
    }
  }
  return '';
}
