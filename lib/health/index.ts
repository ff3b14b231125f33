// Optional entry `nest-redis-locks/health`: needs @nestjs/terminus.
export { RedisLockHealthIndicator } from './redis-lock.health.js';
