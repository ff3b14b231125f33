import { LockConfigError } from '../errors/lock-config.error.js';
import type { LockEngine } from '../locking/engine/lock-engine.js';
import type { ModuleSettings } from './module-settings.js';

/** What decorated methods and the interceptor need at call time. */
export interface LockRuntime {
  readonly engine: LockEngine;
  readonly settings: ModuleSettings;
  warn(message: string): void;
}

const REGISTRY = Symbol.for('nest-redis-locks.runtime');
type GlobalWithRuntime = typeof globalThis & { [REGISTRY]?: LockRuntime[] };

function stack(): LockRuntime[] {
  const g = globalThis as GlobalWithRuntime;
  return (g[REGISTRY] ??= []);
}

/**
 * The running lock services, reached by decorated methods at call time (decorators run before any module
 * exists, so they cannot be injected). Kept on `globalThis`, so both builds of the package share it. The most
 * recently started one serves.
 */
export const LockRegistry = {
  register(runtime: LockRuntime): void {
    stack().push(runtime);
  },
  unregister(runtime: LockRuntime): void {
    const s = stack();
    const i = s.lastIndexOf(runtime);
    if (i >= 0) s.splice(i, 1);
  },
  /** The current runtime, or undefined. */
  find(): LockRuntime | undefined {
    const s = stack();
    return s[s.length - 1];
  },
  /** The current runtime; throws a `LockConfigError` naming `method` when the module is not initialised. */
  get(method: string): LockRuntime {
    const runtime = LockRegistry.find();
    if (!runtime) {
      throw new LockConfigError(
        `${method} is lock-decorated but RedisLockModule is not initialised, so it will not run unlocked: ` +
          `import RedisLockModule.forRoot({ redis: ... }) (or forRootAsync) in the application module`,
        'RedisLockModule',
      );
    }
    return runtime;
  },
};
