import { BadRequestException, Controller, Get, Param } from '@nestjs/common';
import { LockKeyError, LockService } from '../../lib/index.js';
import type { LockInfo } from '../../lib/index.js';

@Controller('locks')
export class LocksController {
  constructor(private readonly locks: LockService) {}

  /** Who holds a lock and who waits (`{ "held": false }` when free); 400 for a key the library refuses. */
  @Get(':key')
  async inspect(@Param('key') key: string): Promise<LockInfo | { key: string; held: false }> {
    try {
      return (await this.locks.inspect(key)) ?? { key, held: false };
    } catch (err) {
      // Not a decorated handler, so the module's HTTP mapping does not apply: map the bad key here.
      if (err instanceof LockKeyError) throw new BadRequestException(err.message, { cause: err });
      throw err;
    }
  }
}
