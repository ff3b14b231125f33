import type { LuaScript } from './lua-script.js';
import { sharded } from './lua-script.js';
import { LOCK_SCRIPTS } from './lock-scripts.js';
import { PERMIT_SCRIPTS } from './permit-scripts.js';

/** Every script of locks and semaphores, as written (loaded at start-up, in its variant for the topology). */
export const SCRIPTS: readonly LuaScript[] = [...LOCK_SCRIPTS, ...PERMIT_SCRIPTS];

/** Every script the library may send, standalone and Cluster (SPUBLISH) variants alike: the SHA → source lookup. */
export const SCRIPT_VARIANTS: readonly LuaScript[] = SCRIPTS.flatMap((s) => {
  const variant = sharded(s);
  return variant === s ? [s] : [s, variant];
});
