import { Injectable } from '@nestjs/common';
import { LockService } from 'nest-redis-locks';
import { CounterStore } from './counter.store';

/** The same increment, locked with `LockService.withLock` instead of a decorator. */
@Injectable()
export class CounterService {
  constructor(
    private readonly locks: LockService,
    private readonly store: CounterStore,
  ) {}

  increment(id: string): Promise<number> {
    return this.locks.withLock(`counter-svc:${id}`, () => this.store.incrementUnsafely(id));
  }
}
