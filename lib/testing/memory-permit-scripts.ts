import { kindConflict } from '../store/kind-conflict.js';
import type {
  AcquireCall,
  AcquireReply,
  HolderIdentity,
  ReleaseReply,
  WaitingCall,
  WaitingReply,
} from '../store/lock-store.js';
import { CLAIM_MS, WAITER_LEASE_MS } from '../store/waiter-timing.js';
import type { LockHolderInfo } from '../types/lock.types.js';
import type { PermitHolder } from '../store/permit-store.js';
import type { PermitInfo } from '../types/permit.types.js';
import { liveCount, purge, purgeQueue } from './memory-lock-prelude.js';
import type { MemoryLockState, ScriptScope } from './memory-lock-world.js';

/*
 * The semaphore scripts of `lib/redis/permit-scripts.ts`, in process memory (see `MemoryLockStore`). A semaphore's
 * state is a lock's state with `limit` set; non-fair waiters are in `writers`, fair ones in `queue` as `w:<id>`.
 */

/** How long SET_LIMIT keeps a semaphore's limit, idle or not. */
const KEEP_SET_LIMIT_MS = 86_400_000;

/** A lock's state (holders without a limit) cannot be taken as a semaphore's. */
function checkKind(key: string, s: MemoryLockState): void {
  if (s.limit === undefined && s.holders.size > 0) throw kindConflict(key, 'lock');
}

export function acquirePermit(
  s: MemoryLockState,
  call: AcquireCall,
  limitAsked: number,
  identity: HolderIdentity,
  x: ScriptScope,
): { reply: AcquireReply; limit: number } {
  const { token, leaseMs, seq, waiterId, fair, lock } = call;
  checkKind(lock.key, s);
  const limit = s.limit ?? limitAsked;
  const resent = s.holders.get(token);
  if (resent) return { reply: { granted: true, fencingToken: resent.fence, reentered: false }, limit };
  purge(s, x.now);
  purgeQueue(s, x.now);
  const used = s.leases.size;
  const member = waiterId === '' ? '' : `w:${waiterId}`;
  const members = [...s.queue.keys()];
  const rank = member === '' ? -1 : members.indexOf(member);
  const queued = rank >= 0;
  const ahead = queued ? rank >= limit - used : members.length > 0 && members.length >= limit - used;
  const blocked = used >= limit ? 1 : ahead ? 5 : 0;
  if (blocked === 0) {
    const fence = x.nextFence();
    s.holders.set(token, { count: 1, seq, fence, since: Date.now(), at: x.now, identity, owner: call.ownerId });
    s.leases.set(token, x.now + leaseMs);
    s.fence = fence;
    s.limit = limit;
    if (waiterId !== '') s.writers.delete(waiterId);
    if (queued) s.queue.delete(member);
    if (used + 1 < limit) wakePermits(s, x);
    return { reply: { granted: true, fencingToken: fence, reentered: false }, limit };
  }
  let until = Math.min(...s.leases.values(), Number.POSITIVE_INFINITY);
  if (!Number.isFinite(until)) until = x.now;
  if (member !== '') {
    s.limit ??= limit;
    if (fair || queued) s.queue.set(member, x.now + WAITER_LEASE_MS);
    else s.writers.set(waiterId, x.now + WAITER_LEASE_MS);
  }
  wakePermits(s, x);
  return {
    reply: {
      granted: false,
      retryInMs: Math.max(until - x.now, 0),
      blockedBy: blocked === 5 ? 'fair-queue' : 'writer',
    },
    limit,
  };
}

export function releasePermit(s: MemoryLockState, token: string, x: ScriptScope): ReleaseReply {
  if (!s.holders.has(token)) return 'not-held';
  s.holders.delete(token);
  s.leases.delete(token);
  purge(s, x.now);
  wakePermits(s, x);
  return 'ended';
}

export function cancelPermitWait(s: MemoryLockState, waiterId: string, x: ScriptScope): void {
  s.writers.delete(waiterId);
  s.queue.delete(`w:${waiterId}`);
  purge(s, x.now);
  wakePermits(s, x);
}

export function keepWaitingForPermit(
  s: MemoryLockState,
  wait: WaitingCall,
  x: ScriptScope,
  woken: Map<MemoryLockState, string[]>,
): WaitingReply {
  const member = wait.fair ? `w:${wait.waiterId}` : wait.waiterId;
  const set = wait.fair ? s.queue : s.writers;
  const score = set.get(member);
  if (score === undefined || score <= x.now + CLAIM_MS) return 'attempt';
  set.set(member, x.now + WAITER_LEASE_MS);
  let named = woken.get(s);
  if (!named) {
    purge(s, x.now);
    named = wakePermits(s, x);
    woken.set(s, named);
  }
  return named.includes(member) ? 'attempt' : 'waiting';
}

export function forceReleasePermits(s: MemoryLockState, key: string, which: PermitHolder, x: ScriptScope): number {
  checkKind(key, s);
  let freed = 0;
  for (const [t, expiry] of [...s.leases]) {
    if (which.token !== undefined && t !== which.token) continue;
    if (which.token === undefined && which.owner !== undefined && s.holders.get(t)?.owner !== which.owner) continue;
    if (expiry > x.now) freed++;
    s.leases.delete(t);
    s.holders.delete(t);
  }
  purge(s, x.now);
  wakePermits(s, x);
  return freed;
}

export function setPermitLimit(s: MemoryLockState, key: string, limit: number, x: ScriptScope): number {
  checkKind(key, s);
  const before = s.limit ?? 0;
  s.limit = limit;
  s.keptUntil = x.now + KEEP_SET_LIMIT_MS;
  purge(s, x.now);
  wakePermits(s, x);
  return before;
}

export function inspectPermits(key: string, s: MemoryLockState, now: number): PermitInfo | null {
  checkKind(key, s);
  if (s.limit === undefined) return null;
  const holders: LockHolderInfo[] = [];
  const leases = [...s.leases].filter(([, expiry]) => expiry > now).sort(([, a], [, b]) => a - b);
  for (const [token, expiry] of leases) {
    const h = s.holders.get(token);
    if (!h) continue;
    const { host, pid, app } = h.identity;
    holders.push({
      mode: 'write',
      owner: h.owner,
      host,
      pid,
      app,
      holdCount: 1,
      finished: false,
      since: new Date(h.since),
      remainingLeaseMs: Math.ceil(expiry - now),
      fencingToken: h.fence,
    });
  }
  const waiting = liveCount(s.writers, now) + liveCount(s.queue, now);
  return { key, limit: s.limit, used: holders.length, holders, waiting, fencingToken: s.fence };
}

/**
 * Wakes as many waiters as there are free permits, fair ones first in arrival order; waiters within their claim
 * window count as taking one. Returns the members woken now.
 */
function wakePermits(s: MemoryLockState, x: ScriptScope): string[] {
  if (s.writers.size === 0 && s.queue.size === 0) return [];
  const now = x.now;
  for (const [id, expiry] of s.writers) if (expiry <= now) s.writers.delete(id);
  purgeQueue(s, now);
  let free = (s.limit ?? 0) - liveCount(s.leases, now);
  if (free <= 0) return [];
  const woken: string[] = [];
  const head = [...s.queue].slice(0, free);
  for (const [member, expiry] of head) {
    if (expiry <= now + CLAIM_MS) continue;
    s.queue.set(member, now + CLAIM_MS);
    x.publish({ waiterId: member.slice(2) });
    woken.push(member);
  }
  free -= head.length;
  for (const expiry of s.writers.values()) if (expiry <= now + CLAIM_MS) free--;
  if (free <= 0) return woken;
  const next = [...s.writers]
    .filter(([, expiry]) => expiry > now + CLAIM_MS)
    .sort(([, a], [, b]) => a - b)
    .slice(0, free);
  for (const [id] of next) {
    s.writers.set(id, now + CLAIM_MS);
    x.publish({ waiterId: id });
    woken.push(id);
  }
  return woken;
}
