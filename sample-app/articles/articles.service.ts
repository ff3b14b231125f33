import { Inject, Injectable, NotFoundException } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { LockService, WriteLocked } from '../../lib/index.js';
import type { Article, UpdateArticleDto } from './article.dto.js';
import { ARTICLES_REDIS } from './articles.redis.js';
import { StaleWriteException } from './stale-write.exception.js';
import { CHANGES_STREAM } from '../jobs/changes-relay.js';

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The check both scripts share, on `KEYS[2]`, the article's fence record `<newest fencing token>|<its holder's lock
 * token>`: a token smaller than the newest is refused, and so is an equal token from another holder (after a failover
 * that lost the last grant, Redis can hand the same token out twice: the second holder must not pass as the first).
 * ARGV[1]: this access's fencing token; ARGV[2]: the lock token of its holder.
 */
const FENCE_CHECK = `
local record = redis.call('GET', KEYS[2]) or '0|'
local newest, holder = string.match(record, '^(%d+)|?(.*)$')
newest = tonumber(newest)
local token = tonumber(ARGV[1])
if token < newest or (token == newest and holder ~= ARGV[2]) then return { 0, newest } end
redis.call('SET', KEYS[2], ARGV[1] .. '|' .. ARGV[2])
`;

/**
 * One read of the article store under the article's write lock: refused if its fencing token is smaller than the
 * newest one the article was read or written with (or equal, from another holder); otherwise records it as the newest
 * and returns the value. The read is part of the critical section: a write computed from it is only safe if no newer
 * holder has read meanwhile, and only the store can see that.
 * KEYS[1]: the key read; KEYS[2]: the article's fence record. ARGV[1]: this read's fencing token; ARGV[2]: its holder's
 * lock token; ARGV[3]: the command (GET or HGET); ARGV[4..]: its arguments after the key.
 * Returns { 1, value } (or { 1 } for a missing value) when allowed, { 0, newest fencing token } when refused.
 */
export const FENCED_READ = `-- fenced read
${FENCE_CHECK}
local value = redis.call(ARGV[3], KEYS[1], unpack(ARGV, 4))
if not value then return { 1 } end
return { 1, value }
`;

/**
 * One write of the article store, applied only if its fencing token is not smaller than the newest one the article
 * was read or written with, nor equal from another holder (checked and recorded in the same script, so no write can
 * slip in between).
 * KEYS[1]: the key written; KEYS[2]: the article's fence record.
 * ARGV[1]: this write's fencing token, or '' for an unfenced write; ARGV[2]: its holder's lock token; ARGV[3]: the
 * command (SET or HSET); ARGV[4..]: its arguments after the key.
 * Returns { 1 } when applied, { 0, newest fencing token } when refused.
 */
export const FENCED_WRITE = `
if ARGV[1] ~= '' then
${FENCE_CHECK}
end
redis.call(ARGV[3], KEYS[1], unpack(ARGV, 4))
return { 1 }
`;

/**
 * Articles stored in Redis: `articles:<id>` (a hash), `articles:<id>:likes` (a counter) and `articles:<id>:fence`
 * (the newest fencing token the article was read or written with, and its holder's lock token).
 *
 * A fencing token protects only what the store checks, reads included. Reads and writes made under the article's
 * write lock carry that lock's fencing token, and the store refuses either when a newer token has been seen
 * (`StaleWriteException`, HTTP 409). So a holder that lost its lock while paused (its lease ran out, another caller
 * took the lock) can neither overwrite the newer holder's data when it wakes up, nor write a value computed from a
 * read that the newer holder has read past: checking writes alone would let "A reads 10, pauses; B reads 10; A writes
 * 11; B writes 11" lose an increment, since A's write comes before any newer write.
 */
@Injectable()
export class ArticlesService {
  constructor(
    @Inject(ARTICLES_REDIS) private readonly redis: Redis,
    private readonly locks: LockService,
  ) {}

  async find(id: string): Promise<Article> {
    const [fields, likes] = await Promise.all([
      this.redis.hgetall(`articles:${id}`),
      this.redis.get(`articles:${id}:likes`),
    ]);
    if (!fields.title) throw new NotFoundException(`article ${id} not found`);
    return {
      id,
      title: fields.title,
      body: fields.body ?? '',
      likes: Number(likes ?? 0),
      version: Number(fields.version ?? 0),
    };
  }

  /**
   * Read-modify-write of the whole article: the version goes up by one per update. Fenced when called under the
   * article's write lock (the controller's `@WriteLocked('article:<id>')`).
   * @throws {StaleWriteException} when a newer lock holder has read or written the article meanwhile.
   */
  async update(id: string, dto: UpdateArticleDto): Promise<Article> {
    const version = Number((await this.read(id, `articles:${id}`, ['HGET', 'version'])) ?? 0);
    await pause(1);
    await this.write(id, `articles:${id}`, ['HSET', 'title', dto.title, 'body', dto.body, 'version', version + 1]);
    // The change, for the relay (the @Leader role): delivered to the feed by whichever instance leads.
    await this.redis.xadd(CHANGES_STREAM, 'MAXLEN', '~', 10_000, '*', 'id', id, 'version', String(version + 1));
    return this.find(id);
  }

  /**
   * A deliberately racy read-modify-write (GET, an await, then SET). Safe only under the article's write
   * lock, which the callers hold; re-entering it here costs no wait. The SET is fenced like `update`.
   */
  @WriteLocked('article:<id>')
  async like(id: string): Promise<number> {
    return this.incrementLikes(id);
  }

  /**
   * An export (~200 ms of work), counted in Redis while it runs: `articles:exports:running` now,
   * `articles:exports:max` the most at once, `articles:exports:done` in all. Called under the export semaphore.
   */
  async exportArticle(id: string): Promise<{ id: string; running: number }> {
    const running = (await this.redis.eval(
      "local n = redis.call('INCR', KEYS[1]) if n > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], n) end return n",
      2,
      'articles:exports:running',
      'articles:exports:max',
    )) as number;
    try {
      await pause(200);
    } finally {
      await this.redis.multi().decr('articles:exports:running').incr('articles:exports:done').exec();
    }
    return { id, running };
  }

  async exportStats(): Promise<{ maxRunning: number; done: number }> {
    const [max, done] = await this.redis.mget('articles:exports:max', 'articles:exports:done');
    return { maxRunning: Number(max ?? 0), done: Number(done ?? 0) };
  }

  /** The same read-modify-write with no lock at all: loses updates under concurrency (for the demonstration). */
  async likeUnlocked(id: string): Promise<number> {
    return this.incrementLikes(id);
  }

  private async incrementLikes(id: string): Promise<number> {
    const likes = Number((await this.read(id, `articles:${id}:likes`, ['GET'])) ?? 0);
    await pause(2);
    await this.write(id, `articles:${id}:likes`, ['SET', likes + 1]);
    return likes + 1;
  }

  /**
   * Reads `key` with `command` (GET, or HGET with its field) with the fencing token of the article's write lock, if
   * the caller holds it (the store records it as the newest, or refuses the read when a newer one was seen); a plain
   * read otherwise.
   */
  private async read(id: string, key: string, command: readonly [string, ...string[]]): Promise<string | null> {
    const { token, holder } = this.fence(id);
    if (token === undefined) {
      const [name, ...args] = command;
      return (await this.redis.call(name, key, ...args)) as string | null;
    }
    const result = (await this.redis.eval(FENCED_READ, 2, key, `articles:${id}:fence`, token, holder, ...command)) as [
      number,
      (string | number)?,
    ];
    if (result[0] !== 1) throw new StaleWriteException(id, token, Number(result[1]));
    return result[1] === undefined ? null : String(result[1]);
  }

  /**
   * Applies `command` to `key` with the fencing token of the article's write lock, if the caller holds it (calls
   * without that lock, such as `likeUnlocked`, write unfenced).
   */
  private async write(id: string, key: string, command: readonly [string, ...(string | number)[]]): Promise<void> {
    const { token, holder } = this.fence(id);
    const fence = `articles:${id}:fence`;
    const result = (await this.redis.eval(FENCED_WRITE, 2, key, fence, token ?? '', holder, ...command)) as [
      number,
      number?,
    ];
    if (result[0] !== 1) throw new StaleWriteException(id, token!, Number(result[1]));
  }

  /** The fencing token and lock token of the write lock on `article:<id>` this call runs under, if any. */
  private fence(id: string): { token: number | undefined; holder: string } {
    const lock = this.locks.current();
    return lock?.mode === 'write'
      ? { token: lock.fencingTokens[`article:${id}`], holder: lock.token }
      : { token: undefined, holder: '' };
  }
}
