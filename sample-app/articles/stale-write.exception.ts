import { ConflictException } from '@nestjs/common';

/**
 * HTTP 409: the read or write carried a fencing token smaller than one the article has already been read or written
 * with, so a newer holder of the article's lock has read or written since this caller's lock was granted (its lease
 * ran out while it was paused or slow). The store refused it; retry from a fresh read under a fresh lock.
 */
export class StaleWriteException extends ConflictException {
  constructor(
    readonly articleId: string,
    /** The fencing token this write carried. */
    readonly fencingToken: number,
    /** The newest fencing token the article has been read or written with. */
    readonly lastFencingToken: number,
  ) {
    super({
      statusCode: 409,
      error: 'Conflict',
      message:
        `article ${articleId}: a newer lock holder has read or written (fencing token ${lastFencingToken}); ` +
        `this read or write carried fencing token ${fencingToken} and was refused`,
      articleId,
      fencingToken,
      lastFencingToken,
    });
  }
}
