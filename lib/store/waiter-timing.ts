// Waiter liveness timing, shared by every store (the Lua scripts and the memory world) and by the engine's heartbeat.

/**
 * How long a waiter's registration lives without a heartbeat, in milliseconds (Redis time). Live waiters renew it
 * every `WAITER_HEARTBEAT_MS` (KEEP_WAITING, batched per process), so a waiter that died or froze is passed over
 * within this. See docs/internals.md, "Waiter liveness".
 */
export const WAITER_LEASE_MS = 1_000;
/** How often a process renews its waiters' registrations, in milliseconds: several times per `WAITER_LEASE_MS`. */
export const WAITER_HEARTBEAT_MS = 150;
/**
 * How long a waiter woken by name has to take its turn, in milliseconds, unless its heartbeat shows it alive: longer
 * than one heartbeat period, so only a waiter whose process is dead or stalled loses its turn.
 */
export const CLAIM_MS = 250;
