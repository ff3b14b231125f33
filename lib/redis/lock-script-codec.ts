import type { LockHolderInfo, LockInfo, LockMode } from '../types/lock.types.js';
import type { LockKeys } from './key-layout.js';
import { kindConflict } from '../store/kind-conflict.js';
import type { AcquireCall, AcquireReply, BlockedBy, ReleaseReply, WakeUp } from '../store/lock-store.js';

/**
 * The lock scripts' side of the wire: the KEYS/ARGV of each lock script, the mode encoding (`w`/`r`), the holder
 * record `count|seq|fence|since|host|pid|app|owner`, the wake-up messages and the reply codes. `RedisLockStore`
 * sends what this encodes through its `ScriptGateway`, and decodes the replies here.
 */

const BLOCKED_BY: readonly BlockedBy[] = ['writer', 'writer', 'readers', 'waiting-writer', 'not-held', 'fair-queue'];

/** `host|pid|app|`, the start of every holder record's identity part (`|` in the names replaced by `_`). */
export function holderIdentity(identity: {
  readonly host: string;
  readonly pid: number;
  readonly app: string;
}): string {
  const clean = (s: string) => s.replace(/\|/g, '_');
  return `${clean(identity.host)}|${identity.pid}|${clean(identity.app)}|`;
}

/**
 * ACQUIRE's ARGV: token, mode with flags (`e` re-entry only, `f` fair), leaseMs, seq, holder identity, waiter id,
 * and the downgrade token only when there is one (every argument costs on both sides of the connection).
 * `identity` is `holderIdentity(…)`. KEYS: the lock's `all`.
 */
export function acquireArgs(call: AcquireCall, identity: string): (string | number)[] {
  let flags: string = modeCode(call.mode);
  if (call.reentry) flags += 'e';
  if (call.fair) flags += 'f';
  const args: (string | number)[] = [call.token, flags, call.leaseMs, call.seq, identity + call.ownerId, call.waiterId];
  if (call.downgradeToken !== '') args.push(call.downgradeToken);
  return args;
}

/** ACQUIRE's reply `{1, fence, reentered}` or `{0, waitMs, blockedBy}`; `{-1, …}`: a semaphore lives under `key`. */
export function acquireReply(raw: unknown, key: string): AcquireReply {
  const [ok, value, detail] = raw as [number, number, number];
  if (ok === 1) return { granted: true, fencingToken: value, reentered: detail === 1 };
  if (ok === -1) throw kindConflict(key, 'semaphore');
  return { granted: false, retryInMs: value, blockedBy: BLOCKED_BY[detail] ?? 'writer' };
}

/** RELEASE's reply: 2 ended, 1 one level (or already applied), 0 not held. */
export function releaseReply(raw: unknown): ReleaseReply {
  return raw === 2 ? 'ended' : raw === 1 ? 'level' : 'not-held';
}

export function modeCode(mode: LockMode): 'w' | 'r' {
  return mode === 'write' ? 'w' : 'r';
}

/** INSPECT's reply `{now, flat HGETALL of the state, flat live leases, waiting writers, waiting readers}`. */
export function inspectReply(names: LockKeys, raw: unknown): LockInfo | null {
  const [now, fields, leases, writersWaiting, readersWaiting] = raw as [number, string[], string[], number, number];
  const state = new Map<string, string>();
  for (let i = 0; i < fields.length; i += 2) state.set(fields[i], fields[i + 1]);
  if (state.has('n')) throw kindConflict(names.key, 'semaphore');
  const writer = state.get('w');
  const holders: LockHolderInfo[] = [];
  for (let i = 0; i < leases.length; i += 2) {
    const token = leases[i];
    const record = state.get(`h:${token}`);
    if (record) holders.push(decodeHolder(record, token === writer ? 'write' : 'read', Number(leases[i + 1]) - now));
  }
  if (holders.length === 0) return null;
  return {
    key: names.key,
    mode: holders.some((h) => h.mode === 'write') ? 'write' : 'read',
    holders,
    waiting: writersWaiting + readersWaiting,
    waitingWriters: writersWaiting,
    waitingReaders: readersWaiting,
    fencingToken: Number(state.get('f') ?? 0),
  };
}

/** Wake-up messages, as the scripts publish them: `r` every reader, `w:<id>` / `f:<id>` one named waiter. */
export function decodeWakeUp(message: string): WakeUp {
  return message === 'r' ? 'readers' : { waiterId: message.slice(2) };
}

/** A holder record `count|seq|fence|since|host|pid|app|owner` (the owner id is last: it may contain anything). */
export function decodeHolder(record: string, mode: LockMode, remainingLeaseMs: number): LockHolderInfo {
  const [count, , fence, since, host, pid, app, ...owner] = record.split('|');
  return {
    mode,
    owner: owner.join('|'),
    host,
    pid: Number(pid),
    app,
    holdCount: Number(count),
    finished: count === '0',
    since: new Date(Number(since)),
    remainingLeaseMs,
    fencingToken: Number(fence),
  };
}
