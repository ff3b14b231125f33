import type { PermitInfo } from '../types/permit.types.js';
import { kindConflict } from '../store/kind-conflict.js';
import { decodeHolder } from './lock-script-codec.js';
import type { AcquireCall, AcquireReply } from '../store/lock-store.js';

/**
 * The semaphore scripts' side of the wire (`permit-scripts.ts`): PERMIT_ACQUIRE's ARGV and reply, and PERMIT_INSPECT's
 * reply
 * decoded.
 */

/** PERMIT_ACQUIRE's ARGV: token, flags (`w`, `f` fair), leaseMs, seq, holder identity + owner, waiter id, limit. */
export function permitArgs(call: AcquireCall, identity: string, limit: number): (string | number)[] {
  return [call.token, call.fair ? 'wf' : 'w', call.leaseMs, call.seq, identity + call.ownerId, call.waiterId, limit];
}

/** PERMIT_ACQUIRE's reply `{1, fence, resent, limit}` / `{0, waitMs, blockedBy, limit}`; `[-1]` a lock is there. */
export function permitReply(key: string, raw: unknown): { reply: AcquireReply; limit: number } {
  const [ok, value, detail, limit] = raw as [number, number, number, number];
  if (ok === -1) throw kindConflict(key, 'lock');
  if (ok === 1) return { reply: { granted: true, fencingToken: value, reentered: false }, limit };
  return { reply: { granted: false, retryInMs: value, blockedBy: detail === 5 ? 'fair-queue' : 'writer' }, limit };
}

/**
 * PERMIT_INSPECT's reply (`permit-control-scripts.ts`, INSPECT's shape) of a semaphore's keys; `null` when it has no
 * state, or is a lock's.
 */
export function permitInspectReply(key: string, raw: unknown): PermitInfo | null {
  const [now, fields, leases, waiting] = raw as [number, string[], string[], number, number];
  const state = new Map<string, string>();
  for (let i = 0; i < fields.length; i += 2) state.set(fields[i], fields[i + 1]);
  const limit = state.get('n');
  if (limit === undefined) {
    if (state.has('f')) throw kindConflict(key, 'lock');
    return null;
  }
  const holders = [];
  for (let i = 0; i < leases.length; i += 2) {
    const record = state.get(`h:${leases[i]}`);
    if (record) holders.push(decodeHolder(record, 'write', Number(leases[i + 1]) - now));
  }
  return {
    key,
    limit: Number(limit),
    used: holders.length,
    holders,
    waiting,
    fencingToken: Number(state.get('pf') ?? 0),
  };
}
