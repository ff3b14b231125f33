import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { Leader } from '../../lib/index.js';
import type { Leadership } from '../../lib/index.js';
import { ARTICLES_REDIS } from '../articles/articles.redis.js';

/** The stream every article update is appended to (by `ArticlesService.update`). */
export const CHANGES_STREAM = 'articles:changes';
/** What the relay delivers to: a list of `<article id>@<version>`, in stream order. */
export const CHANGES_FEED = 'articles:feed';
/** The relay's state: `term` (the newest term that relayed) and `cursor` (the last stream id delivered). */
export const RELAY_STATE = 'articles:relay';

/**
 * One relay step, fenced by the leader's term: refused when a newer term has relayed (a leader that lost its
 * leadership while paused cannot deliver again what its successor delivered, nor move the cursor back); otherwise
 * records the term, appends the entries to the feed and moves the cursor, in one script.
 * KEYS[1]: the relay state; KEYS[2]: the feed. ARGV[1]: the term; ARGV[2]: the cursor read; ARGV[3]: the new cursor;
 * ARGV[4..]: the entries. Returns { 1 } when applied, { 0, newest term } when refused.
 */
const RELAY_STEP = `
local newest = tonumber(redis.call('HGET', KEYS[1], 'term') or '0')
if tonumber(ARGV[1]) < newest then return { 0, newest } end
if (redis.call('HGET', KEYS[1], 'cursor') or '0-0') ~= ARGV[2] then return { 0, newest } end
redis.call('HSET', KEYS[1], 'term', ARGV[1], 'cursor', ARGV[3])
if #ARGV > 3 then redis.call('RPUSH', KEYS[2], unpack(ARGV, 4)) end
return { 1 }
`;

const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });

/**
 * A role that must run on one instance at a time: relays article changes from the stream `articles:changes` to the
 * feed `articles:feed`, under `@Leader('articles.relay')`. The other instances stand by and take over within the
 * leadership lease when the leader stops or dies; every step is fenced by the term.
 */
@Injectable()
export class ChangesRelay {
  private readonly logger = new Logger(ChangesRelay.name);

  constructor(@Inject(ARTICLES_REDIS) private readonly redis: Redis) {}

  @Leader('articles.relay')
  async run(lead: Leadership): Promise<void> {
    this.logger.log(`relaying article changes, term ${lead.term}`);
    while (!lead.signal.aborted) {
      const delivered = await this.step(lead.term);
      if (delivered === 0) await pause(250, lead.signal);
    }
  }

  /** Delivers up to 100 changes after the cursor; resolves how many (0 when none, or when refused). */
  private async step(term: number): Promise<number> {
    const cursor = (await this.redis.hget(RELAY_STATE, 'cursor')) ?? '0-0';
    const entries = await this.redis.xrange(CHANGES_STREAM, `(${cursor}`, '+', 'COUNT', 100);
    if (entries.length === 0) return 0;
    const items = entries.map(([, fields]) => `${fields[1]}@${fields[3]}`);
    const next = entries[entries.length - 1][0];
    const result = (await this.redis.eval(RELAY_STEP, 2, RELAY_STATE, CHANGES_FEED, term, cursor, next, ...items)) as [
      number,
      number?,
    ];
    if (result[0] !== 1) {
      this.logger.warn(`relay step of term ${term} refused (newest term ${result[1]}, or another step moved on)`);
      return 0;
    }
    return items.length;
  }

  /** The relay's state: the newest term that relayed, the cursor and how many changes the feed has. */
  async status(): Promise<{ term: number; cursor: string; relayed: number }> {
    const [[term, cursor], relayed] = await Promise.all([
      this.redis.hmget(RELAY_STATE, 'term', 'cursor'),
      this.redis.llen(CHANGES_FEED),
    ]);
    return { term: Number(term ?? 0), cursor: cursor ?? '0-0', relayed };
  }
}
