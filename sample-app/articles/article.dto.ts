/** Body of `PUT /articles/:id`. */
export interface UpdateArticleDto {
  readonly title: string;
  readonly body: string;
}

/** An article as stored and returned. */
export interface Article {
  readonly id: string;
  readonly title: string;
  readonly body: string;
  readonly likes: number;
  readonly version: number;
}
