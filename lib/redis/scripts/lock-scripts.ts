import type { LuaScript } from './lua-script.js';
import { ACQUIRE, ACQUIRE_BATCH } from './lock-acquire-script.js';
import { EXTEND, RELEASE, RELEASE_BATCH, RENEW_MANY, RENEW_MANY_CROSS_SLOT } from './lock-hold-scripts.js';
import { CANCEL_WAIT, FORCE_RELEASE, INSPECT, KEEP_WAITING, KEEP_WAITING_CROSS_SLOT } from './lock-control-scripts.js';

// The lock scripts in one place, for their callers (the store, the heartbeat, the renewals, the tests).
export { ACQUIRE, ACQUIRE_BATCH, CANCEL_WAIT, EXTEND, FORCE_RELEASE, INSPECT, KEEP_WAITING, KEEP_WAITING_CROSS_SLOT };
export { RELEASE, RELEASE_BATCH, RENEW_MANY, RENEW_MANY_CROSS_SLOT };

/** Every lock script (the index, `index.ts`, adds the semaphore's and the Cluster variants). */
export const LOCK_SCRIPTS: readonly LuaScript[] = [
  ACQUIRE,
  ACQUIRE_BATCH,
  CANCEL_WAIT,
  EXTEND,
  FORCE_RELEASE,
  INSPECT,
  KEEP_WAITING,
  KEEP_WAITING_CROSS_SLOT,
  RELEASE,
  RELEASE_BATCH,
  RENEW_MANY,
  RENEW_MANY_CROSS_SLOT,
];
