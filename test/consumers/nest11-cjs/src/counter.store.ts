import { Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppRedis } from './redis.provider';

/**
 * A deliberately racy read-modify-write of a Redis counter: GET, an await, then SET. Safe only under a lock;
 * without one, concurrent increments overwrite each other.
 */
@Injectable()
export class CounterStore {
  constructor(private readonly redis: AppRedis) {}

  key(id: string): string {
    return `consumer-nest11:counter:${id}`;
  }

  async read(id: string): Promise<number> {
    return Number((await this.redis.client.get(this.key(id))) ?? 0);
  }

  async incrementUnsafely(id: string): Promise<number> {
    const value = await this.read(id);
    await sleep(2);
    await this.redis.client.set(this.key(id), String(value + 1), 'EX', 600);
    return value + 1;
  }
}
