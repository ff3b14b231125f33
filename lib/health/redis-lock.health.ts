import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import type { HealthIndicatorResult } from '@nestjs/terminus';
import { LockService } from '../nest/lock.service.js';

/**
 * `@nestjs/terminus` health indicator: pings Redis on the command connection and on the subscriber connection
 * that carries wake-ups. Its details also give this process's holds and waiters now, per kind (`holds`, `waiters`:
 * `{ lock, semaphore, leader }`, the numbers of the `lock.holds` and `lock.waiters` gauges, read without Redis).
 * Import it from `nest-redis-locks/health` (kept out of the main entry so terminus stays
 * optional) and add it to a module's providers next to `TerminusModule`.
 */
@Injectable()
export class RedisLockHealthIndicator {
  constructor(
    private readonly locks: LockService,
    private readonly health: HealthIndicatorService,
  ) {}

  /** `up` when both connections answer PING within `timeoutMs` (default 1000 ms), `down` otherwise. */
  async isHealthy<const Key extends string = 'redis-lock'>(
    key: Key = 'redis-lock' as Key,
    timeoutMs?: number,
  ): Promise<HealthIndicatorResult<Key>> {
    const session = this.health.check(key);
    const status = await this.locks.ping(timeoutMs);
    const { holds, waiters } = this.locks.engine.activity().load();
    const data = {
      commandMs: status.commandMs,
      subscriberMs: status.subscriberMs,
      heldLocks: this.locks.heldCount,
      holds,
      waiters,
    };
    if (status.command && status.subscriber) return session.up(data);
    return session.down({ ...data, message: status.error ?? 'Redis did not answer' });
  }
}
