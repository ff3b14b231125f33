import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { RedisLockModuleOptions } from './redis-lock-module-options.interface.js';

export const {
  ConfigurableModuleClass: ConfigurableRedisLockModule,
  MODULE_OPTIONS_TOKEN,
  OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<RedisLockModuleOptions>({ moduleName: 'RedisLock' })
  .setClassMethodName('forRoot')
  .setFactoryMethodName('createRedisLockOptions')
  .setExtras({ isGlobal: false }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
  .build();

/** Injection token of the module options (`@Inject(REDIS_LOCK_OPTIONS)`). */
export const REDIS_LOCK_OPTIONS = MODULE_OPTIONS_TOKEN;
