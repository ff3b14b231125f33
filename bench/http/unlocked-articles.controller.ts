import { BadRequestException, Body, Controller, Param, Put } from '@nestjs/common';
import type { Article, UpdateArticleDto } from '../../sample-app/articles/article.dto.js';
import { ArticlesService } from '../../sample-app/articles/articles.service.js';

/**
 * Bench only: the sample app's `PUT /articles/:id` handler, line for line, without `@WriteLocked`, so the HTTP
 * scenario can compare the same work with and without the lock. Mounted at `/bench-unlocked/articles/:id`.
 */
@Controller('bench-unlocked/articles')
export class UnlockedArticlesController {
  constructor(private readonly articles: ArticlesService) {}

  @Put(':id')
  update(@Param('id') id: string, @Body() dto: UpdateArticleDto): Promise<Article> {
    if (typeof dto?.title !== 'string' || typeof dto?.body !== 'string') {
      throw new BadRequestException('body must be { "title": string, "body": string }');
    }
    return this.articles.update(id, dto);
  }
}
