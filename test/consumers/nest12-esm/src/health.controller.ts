import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
// The second entry point of the package, through its `import` condition.
import { RedisLockHealthIndicator } from 'nest-redis-locks/health';

@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly locks: RedisLockHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.locks.isHealthy('redis-lock')]);
  }
}
