// The public API of nest-redis-locks, listed by hand: what is not here is internal.

// Nest module and service
export { RedisLockModule } from './nest/redis-lock.module.js';
export { LockService } from './nest/lock.service.js';
export { REDIS_LOCK_OPTIONS } from './nest/redis-lock.module-definition.js';
export type {
  RedisLockModuleOptions,
  RedisLockOptionsFactory,
  OnLockLost,
} from './nest/redis-lock-module-options.interface.js';
export { DEFAULT_MODULE_SETTINGS } from './nest/module-settings.js';

// Decorators and their HTTP answers
export { WriteLocked, Locked } from './decorators/write-locked.decorator.js';
export { ReadLocked } from './decorators/read-locked.decorator.js';
export { Semaphore } from './decorators/semaphore.decorator.js';
export type { SemaphoreOptions } from './decorators/semaphore.decorator.js';
export { Leader } from './decorators/leader.decorator.js';
export { ScheduledLock } from './schedule/scheduled-lock.decorator.js';
export type { ScheduledLockOptions } from './schedule/scheduled-lock.decorator.js';
export type { LockedOptions } from './decorators/lock-decorator.factory.js';
export type { LockKeySpec } from './decorators/key-template.js';
export { DefaultLockHttpErrorMapper } from './nest/http-error-mapper.js';
export type { LockHttpErrorMapper } from './nest/http-error-mapper.js';
export { LockConflictException } from './nest/lock-conflict.exception.js';

// Engine (framework-free)
export { LockEngine } from './locking/engine/lock-engine.js';
export type { LockEngineOptions, ModeFixedOptions, SkipOptions, WaitOptions } from './locking/engine/engine-options.js';
export { DEFAULT_LOCK_SETTINGS } from './locking/settings/engine-settings.js';
export type { LockEngineSettings } from './locking/settings/engine-settings.js';
export type {
  AcquireOptions,
  HoldState,
  LockHandle,
  LockHolderInfo,
  LockInfo,
  LockMode,
  LockPing,
} from './types/lock.types.js';
export type { PermitHandle, PermitInfo, PermitOptions } from './types/permit.types.js';
export type { CampaignOptions, LeaderFn, LeaderInfo, Leadership, StopCampaign } from './leader/leader.types.js';
export { DEFAULT_CAMPAIGN_OPTIONS } from './leader/leader-options.js';
export type {
  DoubtReason,
  LockEvents,
  LockEventName,
  LockEventListener,
  LockKind,
  LockLogger,
  HeldTooLongEvent,
  LockHolderIdentity,
} from './locking/events/lock-events.js';
export { attachLockMetrics, LOCK_METRICS } from './observability/lock-metrics.js';
export type {
  LockMetricsOptions,
  MeterLike,
  ObservableGaugeLike,
  ObservableResultLike,
} from './observability/lock-metrics.js';
export type { RedisConnectionInput } from './redis/connection.js';
export type { GlideClientLike, IovalkeyLike, NodeRedisLike } from './redis/driver/client-family.js';
export { MAX_KEY_BYTES } from './store/lock-key.js';

// Errors
export {
  LockError,
  LockAcquireTimeoutError,
  LockNotHeldError,
  LockLostError,
  LockUpgradeError,
  LockKeyError,
  LockConfigError,
  LockClosedError,
  LockUnavailableError,
  PermitDeadlockError,
} from './errors/index.js';
export type { LockClosedDuring, LockLostReason, LockUnavailableReason, LockOperation } from './errors/index.js';
