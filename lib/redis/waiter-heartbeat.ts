import type { LockKeys } from './key-layout.js';
import { modeCode } from './lock-script-codec.js';
import type { WaitingCall, WaitingReply } from '../store/lock-store.js';
import { KEEP_WAITING, KEEP_WAITING_CROSS_SLOT } from './scripts/lock-scripts.js';
import type { BatchScripts, NodeBatches } from './node-batches.js';
import type { ScriptGateway } from './script-gateway.js';

/**
 * A heartbeat script (KEYS: the 6 keys of each waiter's lock; ARGV: `args` of each waiter) and its cross-slot variant.
 */
export type HeartbeatScripts = BatchScripts<WaitingCall>;

/** The 6 key names of a waiter's lock, as every heartbeat script takes them. */
export const waiterKeys = (wait: WaitingCall): readonly string[] => (wait.lock as LockKeys).all;

/** The locks' heartbeat: KEEP_WAITING; ARGV waiter id, mode and fair flag of each waiter. */
export const LOCK_HEARTBEAT: HeartbeatScripts = {
  perSlot: KEEP_WAITING,
  crossSlot: KEEP_WAITING_CROSS_SLOT,
  keys: waiterKeys,
  args: (wait) => [wait.waiterId, modeCode(wait.mode), wait.fair ? '1' : '0'],
};

/**
 * The waiters' heartbeat on Redis, for locks and permits alike (each kind names its scripts, `HeartbeatScripts`),
 * routed as the watchdog's renewals are (`NodeBatches`): per chunk of up to 200 waiters, and on a Cluster per chunk of
 * the waiters one master serves, whatever their slots.
 */
export class WaiterHeartbeat {
  constructor(
    private readonly gateway: ScriptGateway,
    private readonly batches: NodeBatches,
  ) {}

  /**
   * `scripts.perSlot` (KEEP_WAITING for locks) per chunk of up to 200 waiters; on a Cluster one `scripts.crossSlot`
   * call per chunk of the waiters one master serves, sent again per slot when a slot of it moved: running the
   * heartbeat again for the waiters it went through is harmless (a registration renewed is renewed again; a waiter
   * woken is within its claim window, answered 2 again, and its wake-up is not sent twice). A node down fails the
   * round, which the waiting room tries again on its next one. Replies: 1 renewed ('waiting'), 0 or 2 ('attempt').
   */
  async keepWaiting(
    waits: readonly WaitingCall[],
    scripts: HeartbeatScripts = LOCK_HEARTBEAT,
  ): Promise<WaitingReply[]> {
    const replies = await this.batches.call(waits, scripts, this.gateway.run);
    return replies.map((r) => (r === 1 ? 'waiting' : 'attempt'));
  }
}
