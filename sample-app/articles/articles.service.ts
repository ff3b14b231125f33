import { Inject, Injectable, NotFoundException } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { WriteLocked } from '../../lib/index.js';
import type { Article, UpdateArticleDto } from './article.dto.js';
import { ARTICLES_REDIS } from './articles.redis.js';

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Articles stored in Redis: `articles:<id>` (a hash) and `articles:<id>:likes` (a counter). */
@Injectable()
export class ArticlesService {
  constructor(@Inject(ARTICLES_REDIS) private readonly redis: Redis) {}

  async find(id: string): Promise<Article> {
    const [fields, likes] = await Promise.all([this.redis.hgetall(`articles:${id}`), this.redis.get(`articles:${id}:likes`)]);
    if (!fields.title) throw new NotFoundException(`article ${id} not found`);
    return { id, title: fields.title, body: fields.body ?? '', likes: Number(likes ?? 0), version: Number(fields.version ?? 0) };
  }

  /** Read-modify-write of the whole article: the version goes up by one per update. */
  async update(id: string, dto: UpdateArticleDto): Promise<Article> {
    const version = Number((await this.redis.hget(`articles:${id}`, 'version')) ?? 0);
    await pause(1);
    await this.redis.hset(`articles:${id}`, { title: dto.title, body: dto.body, version: version + 1 });
    return this.find(id);
  }

  /**
   * A deliberately racy read-modify-write (GET, an await, then SET). Safe only under the article's write
   * lock, which the callers hold; re-entering it here costs no wait.
   */
  @WriteLocked('article:<id>')
  async like(id: string): Promise<number> {
    return this.incrementLikes(id);
  }

  /** The same read-modify-write with no lock at all: loses updates under concurrency (for the demonstration). */
  async likeUnlocked(id: string): Promise<number> {
    return this.incrementLikes(id);
  }

  private async incrementLikes(id: string): Promise<number> {
    const likes = Number((await this.redis.get(`articles:${id}:likes`)) ?? 0);
    await pause(2);
    await this.redis.set(`articles:${id}:likes`, likes + 1);
    return likes + 1;
  }
}
