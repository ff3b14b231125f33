import { Controller, Get, Param } from '@nestjs/common';
import { LockService } from '../../lib/index.js';
import type { LockInfo } from '../../lib/index.js';

@Controller('locks')
export class LocksController {
  constructor(private readonly locks: LockService) {}

  /** Who holds a lock and who waits (`{ "held": false }` when free). */
  @Get(':key')
  async inspect(@Param('key') key: string): Promise<LockInfo | { key: string; held: false }> {
    return (await this.locks.inspect(key)) ?? { key, held: false };
  }
}
