import { Controller, Get, Param, Post } from '@nestjs/common';
import { Semaphore, WriteLocked } from 'nest-redis-locks';
import { CounterStore } from './counter.store';

@Controller('counters')
export class CounterController {
  constructor(private readonly store: CounterStore) {}

  @Post(':id/increment')
  @WriteLocked('counter:<id>')
  async increment(@Param('id') id: string): Promise<{ id: string; value: number }> {
    return { id, value: await this.store.incrementUnsafely(id) };
  }

  private exporting = 0;

  /** At most 2 exports of one counter at once, across every instance (each takes ~50 ms here). */
  @Post(':id/export')
  @Semaphore('counter-export:<id>', { limit: 2 })
  async export(@Param('id') id: string): Promise<{ id: string; running: number }> {
    const running = ++this.exporting;
    try {
      await new Promise((resolve) => setTimeout(resolve, 50));
      return { id, running };
    } finally {
      this.exporting--;
    }
  }

  @Get(':id')
  async read(@Param('id') id: string): Promise<{ id: string; value: number }> {
    return { id, value: await this.store.read(id) };
  }
}
