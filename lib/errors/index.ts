export { LockError } from './lock.error.js';
export { LockAcquireTimeoutError } from './lock-acquire-timeout.error.js';
export { LockNotHeldError } from './lock-not-held.error.js';
export { LockLostError } from './lock-lost.error.js';
export type { LockLostReason } from './lock-lost.error.js';
export { LockUpgradeError } from './lock-upgrade.error.js';
export { LockKeyError } from './lock-key.error.js';
export { LockConfigError } from './lock-config.error.js';
export { LockClosedError } from './lock-closed.error.js';
