import { Module } from '@nestjs/common';
import type { DynamicModule, Provider } from '@nestjs/common';
import { lockBoardController } from './lock-board.controller.js';
import { resolveBoardPath, resolveBoardSettings } from './lock-board-options.js';
import type {
  LockBoardModuleAsyncOptions,
  LockBoardModuleOptions,
  LockBoardRouteOptions,
} from './lock-board-options.js';
import { LOCK_BOARD_SETTINGS, LockBoardService } from './lock-board.service.js';

/**
 * The lock board: a live page of the locks held under the `RedisLockModule`'s `keyPrefix`, with its JSON, served by
 * the application itself as a Nest controller at `path`. Off unless imported; read-only unless `allowForceRelease`.
 * Protect it with `guards` (and the application's global guards, which apply too).
 *
 * @example
 * LockBoardModule.forRoot({ path: 'admin/locks', guards: [AdminGuard] })
 * LockBoardModule.forRootAsync({
 *   path: 'admin/locks',
 *   guards: [AdminGuard],
 *   inject: [ConfigService],
 *   useFactory: (config: ConfigService) => ({ allowForceRelease: config.get('LOCK_BOARD_ACTIONS') === 'on' }),
 * })
 */
@Module({})
export class LockBoardModule {
  /** @throws {LockConfigError} naming the option, when an option is invalid. */
  static forRoot(options: LockBoardModuleOptions = {}): DynamicModule {
    const settings = resolveBoardSettings(options);
    return LockBoardModule.define(options, { provide: LOCK_BOARD_SETTINGS, useValue: settings });
  }

  /** The routes (`path`, `guards`) are fixed here; the other options come from `useFactory`, checked at start-up. */
  static forRootAsync(options: LockBoardModuleAsyncOptions): DynamicModule {
    return LockBoardModule.define(options, {
      provide: LOCK_BOARD_SETTINGS,
      inject: options.inject ?? [],
      useFactory: async (...args: unknown[]) => resolveBoardSettings(await options.useFactory(...args)),
    });
  }

  private static define(options: LockBoardRouteOptions, settings: Provider): DynamicModule {
    const path = resolveBoardPath(options.path);
    return {
      module: LockBoardModule,
      imports: [...(options.imports ?? [])],
      controllers: [lockBoardController(path, options.guards ?? [])],
      providers: [settings, LockBoardService],
    };
  }
}
