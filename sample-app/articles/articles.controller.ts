import { BadRequestException, Body, Controller, Get, HttpCode, Param, Post, Put } from '@nestjs/common';
import { LockService, ReadLocked, Semaphore, WriteLocked } from '../../lib/index.js';
import type { LeaderInfo } from '../../lib/index.js';
import { ChangesRelay } from '../jobs/changes-relay.js';
import type { Article, UpdateArticleDto } from './article.dto.js';
import { ArticlesService } from './articles.service.js';

@Controller('articles')
export class ArticlesController {
  constructor(
    private readonly articles: ArticlesService,
    private readonly relay: ChangesRelay,
    private readonly locks: LockService,
  ) {}

  /** Readers share the lock: many GETs of one article run at once, never during a PUT. */
  @Get(':id')
  @ReadLocked('article:<id>')
  find(@Param('id') id: string): Promise<Article> {
    return this.articles.find(id);
  }

  /**
   * One writer at a time per article. The write carries the lock's fencing token: 409 (`StaleWriteException`) if
   * this request's lock ran out and a newer holder has written the article meanwhile.
   */
  @Put(':id')
  @WriteLocked('article:<id>')
  update(@Param('id') id: string, @Body() dto: UpdateArticleDto): Promise<Article> {
    if (typeof dto?.title !== 'string' || typeof dto?.body !== 'string') {
      throw new BadRequestException('body must be { "title": string, "body": string }');
    }
    return this.articles.update(id, dto);
  }

  /** GET, await, SET of the like counter under the article's write lock: N requests give exactly N likes. */
  @Post(':id/likes')
  @HttpCode(200)
  @WriteLocked('article:<id>')
  async like(@Param('id') id: string): Promise<{ likes: number }> {
    return { likes: await this.articles.like(id) };
  }

  /**
   * Renders an article for download: heavy (~200 ms of work here), so at most 2 run at once across every instance
   * of the app (one semaphore for all articles). Others wait their turn, up to 30 s, then 409.
   */
  @Post(':id/export')
  @HttpCode(200)
  @Semaphore('article-exports', { limit: 2, waitTimeoutMs: 30_000 })
  exportArticle(@Param('id') id: string): Promise<{ id: string; running: number }> {
    return this.articles.exportArticle(id);
  }

  /** How many exports ran at most at once, and how many ran in all (what the semaphore bounds). */
  @Get('exports/stats')
  exportStats(): Promise<{ maxRunning: number; done: number }> {
    return this.articles.exportStats();
  }

  /** Who relays the article changes now (the leader of `articles.relay`) and how far the relay got. */
  @Get('relay/status')
  async relayStatus(): Promise<{ leader: LeaderInfo | null; term: number; cursor: string; relayed: number }> {
    const [leader, status] = await Promise.all([this.locks.leader('articles.relay'), this.relay.status()]);
    return { leader, ...status };
  }

  /** The same without any lock, to show lost updates. Not something to copy. */
  @Post(':id/unsafe-likes')
  @HttpCode(200)
  async likeUnsafe(@Param('id') id: string): Promise<{ likes: number }> {
    return { likes: await this.articles.likeUnlocked(id) };
  }
}
