import { Controller, Get, Param, Post } from '@nestjs/common';
import { WriteLocked } from 'nest-redis-locks';
import { CounterStore } from './counter.store.js';

@Controller('counters')
export class CounterController {
  constructor(private readonly store: CounterStore) {}

  @Post(':id/increment')
  @WriteLocked('counter:<id>')
  async increment(@Param('id') id: string): Promise<{ id: string; value: number }> {
    return { id, value: await this.store.incrementUnsafely(id) };
  }

  @Get(':id')
  async read(@Param('id') id: string): Promise<{ id: string; value: number }> {
    return { id, value: await this.store.read(id) };
  }
}
