import { ConflictException } from '@nestjs/common';

/**
 * HTTP 409: the write carried a fencing token smaller than one the article has already been written with, so a newer
 * holder of the article's lock has written since this caller's lock was granted (its lease ran out while it was
 * paused or slow). The store refused the write; retry from a fresh read under a fresh lock.
 */
export class StaleWriteException extends ConflictException {
  constructor(
    readonly articleId: string,
    /** The fencing token this write carried. */
    readonly fencingToken: number,
    /** The largest fencing token the article has been written with. */
    readonly lastFencingToken: number,
  ) {
    super({
      statusCode: 409,
      error: 'Conflict',
      message:
        `article ${articleId}: a newer lock holder has written (fencing token ${lastFencingToken}); ` +
        `this write carried fencing token ${fencingToken} and was refused`,
      articleId,
      fencingToken,
      lastFencingToken,
    });
  }
}
