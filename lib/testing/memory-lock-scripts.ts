import type {
  AcquireCall,
  AcquireReply,
  BlockedBy,
  HolderIdentity,
  ReleaseReply,
  WaitingCall,
  WaitingReply,
} from '../store/lock-store.js';
import { CLAIM_MS, WAITER_LEASE_MS } from '../store/waiter-timing.js';
import type { LockMode } from '../types/lock.types.js';
import { dropHolds, liveCount, purge, purgeQueue, queueMember, settle, top, wake } from './memory-lock-prelude.js';
import type { MemoryLockState, ScriptScope } from './memory-lock-world.js';

/*
 * The lock scripts of `lib/redis/scripts/`, transliterated to run on a `MemoryLockState`. Each function is one
 * script and runs without yielding, so it is as atomic as the script. Keep them in step with the Lua: the parity
 * suite (test/semantics) runs the same tests on both.
 */

/** ACQUIRE: take or re-enter a hold; when blocked, register `waiterId` (if given). */
export function acquire(s: MemoryLockState, call: AcquireCall, identity: HolderIdentity, x: ScriptScope): AcquireReply {
  const { token, mode, leaseMs, seq, downgradeToken, waiterId, reentry, fair } = call;
  const write = mode === 'write';
  const now = x.now;

  // Fast path: nobody holds the lock and nobody queues for it.
  if (!reentry && s.leases.size === 0 && s.queue.size === 0 && (write || liveCount(s.writers, now) === 0)) {
    const fence = x.nextFence();
    grant(s, call, identity, fence, now);
    if (waiterId !== '') (write ? s.writers : s.readers).delete(waiterId);
    return { granted: true, fencingToken: fence, reentered: false };
  }

  const purged = purge(s, now);
  const held = s.holders.get(token);
  if (held) {
    // Re-entry by the owner context (or the same command sent again).
    if (seq <= held.seq) return { granted: true, fencingToken: held.fence, reentered: true };
    held.count++;
    held.seq = seq;
    const e = now + leaseMs;
    if (e > (s.leases.get(token) ?? 0)) s.leases.set(token, e);
    return { granted: true, fencingToken: held.fence, reentered: true };
  }
  if (reentry) {
    if (purged) {
      settle(s);
      wake(s, x);
    }
    return { granted: false, retryInMs: 0, blockedBy: 'not-held' };
  }

  // Fair queue: a queued waiter may enter at the head (a reader: when only readers are ahead of it).
  const member = waiterId === '' ? '' : queueMember(mode, waiterId);
  let queued = false;
  let ahead = false;
  if (s.queue.size > 0) {
    purgeQueue(s, now);
    const members = [...s.queue.keys()];
    const rank = member === '' ? -1 : members.indexOf(member);
    if (rank >= 0) {
      queued = true;
      if (rank > 0) ahead = write || members.slice(0, rank).some((m) => !m.startsWith('r'));
    } else if (s.queue.size > 0) {
      ahead = true;
    }
  }

  const writer = s.writer;
  let blocked: BlockedBy | undefined;
  if (write) {
    if (writer !== undefined) blocked = 'writer';
    else if (s.leases.size > 0) blocked = 'readers';
  } else if (writer !== undefined) {
    if (writer !== downgradeToken) blocked = 'writer';
  } else if (downgradeToken === '' && !fair && !queued && liveCount(s.writers, now) > 0) {
    blocked = 'waiting-writer';
  }
  // A write owner taking a read lock (downgrade) never queues behind anyone.
  const downgrade = !write && writer !== undefined && writer === downgradeToken;
  if (blocked === undefined && ahead && !downgrade) blocked = 'fair-queue';

  if (blocked === undefined) {
    const fence = x.nextFence();
    grant(s, call, identity, fence, now);
    settle(s);
    if (waiterId !== '') (write ? s.writers : s.readers).delete(waiterId);
    if (queued) s.queue.delete(member);
    if (purged) wake(s, x);
    return { granted: true, fencingToken: fence, reentered: false };
  }

  if (purged) {
    settle(s);
    wake(s, x);
  }
  // When to retry if no wake-up comes first: when the blocking leases can have run out (see ACQUIRE).
  let until: number;
  if (blocked === 'writer') {
    until = s.leases.get(writer!) ?? now;
  } else {
    until = top(s.leases) ?? 0;
    if (until <= now && blocked === 'waiting-writer') {
      until = top(s.writers) ?? now;
    } else if (until <= now && blocked === 'fair-queue') {
      const head = s.queue.keys().next();
      until = head.done ? now : s.queue.get(head.value)!;
    }
  }
  const waitMs = Math.max(until - now, 0);
  if (member !== '') {
    // The registration's liveness lease: the waiter's heartbeat renews it while the waiter lives.
    const expiry = now + WAITER_LEASE_MS;
    // Map.set keeps a queued member in its place: arrival order is insertion order.
    if (fair || queued) s.queue.set(member, expiry);
    else (write ? s.writers : s.readers).set(waiterId, expiry);
  }
  return { granted: false, retryInMs: Math.ceil(waitMs), blockedBy: blocked };
}

/** RELEASE: one level of `token`'s hold (`seq` given), or all of it (`seq` undefined). */
export function release(
  s: MemoryLockState,
  token: string,
  seq: number | undefined,
  x: ScriptScope,
  holdAtLeastMs = 0,
): ReleaseReply {
  const now = x.now;
  let held = s.holders.get(token);
  const count = held?.count ?? 0;
  if (held) {
    if (seq !== undefined && seq <= held.seq) return 'level';
    // The last level before `holdAtLeastMs` has passed: finished but still held until then, nobody woken.
    const until = held.at + holdAtLeastMs;
    if ((seq === undefined || count === 1) && holdAtLeastMs > 0 && until > now && (s.leases.get(token) ?? 0) > now) {
      held.count = 0;
      if (seq !== undefined) held.seq = seq;
      s.leases.set(token, until);
      return 'ended';
    }
    // Fast path: the last level of the only hold, its lease still running.
    if ((seq === undefined || count === 1) && s.leases.size === 1 && (s.leases.get(token) ?? 0) > now) {
      dropHolds(s);
      wake(s, x);
      return 'ended';
    }
  }
  const purged = purge(s, now);
  if (held) held = s.holders.get(token);
  if (!held) {
    if (purged) {
      settle(s);
      wake(s, x);
    }
    return 'not-held';
  }
  if (seq !== undefined && count > 1) {
    held.count = count - 1;
    held.seq = seq;
    return 'level';
  }
  s.holders.delete(token);
  if (s.writer === token) s.writer = undefined;
  s.leases.delete(token);
  settle(s);
  wake(s, x);
  return 'ended';
}

/** RENEW_MANY, for one hold: a lease that already ran out is not revived. */
export function renew(s: MemoryLockState, token: string, leaseMs: number, x: ScriptScope): boolean {
  const lease = s.leases.get(token);
  if (lease === undefined || lease <= x.now) return false;
  if (x.now + leaseMs > lease) s.leases.set(token, x.now + leaseMs);
  return true;
}

/** EXTEND: the lease runs `ms` from now (may shorten it). */
export function extend(s: MemoryLockState, token: string, ms: number, x: ScriptScope): boolean {
  const lease = s.leases.get(token);
  if (lease === undefined || lease <= x.now) return false;
  s.leases.set(token, x.now + ms);
  settle(s);
  return true;
}

/** CANCEL_WAIT: drop a waiter's registration (fair or not) and pass on any wake-up it may have taken. */
export function cancelWait(s: MemoryLockState, mode: LockMode, waiterId: string, x: ScriptScope): void {
  (mode === 'write' ? s.writers : s.readers).delete(waiterId);
  s.queue.delete(queueMember(mode, waiterId));
  if (purge(s, x.now)) settle(s);
  wake(s, x);
}

/**
 * KEEP_WAITING for one waiter: renews a live registration (never re-creates one), passes over dead waiters and says
 * whether the waiter may get in now. `woken`: what `wake` woke earlier in the same call, per lock state.
 */
export function keepWaiting(
  s: MemoryLockState,
  wait: WaitingCall,
  x: ScriptScope,
  woken: Map<MemoryLockState, string[]>,
): WaitingReply {
  const { mode, waiterId, fair } = wait;
  const member = fair ? queueMember(mode, waiterId) : waiterId;
  const set = fair ? s.queue : mode === 'write' ? s.writers : s.readers;
  const score = set.get(member);
  if (score === undefined || score <= x.now) return 'attempt';
  // Within its claim window (woken by name): not renewed, attempt now.
  if (score <= x.now + CLAIM_MS) return 'attempt';
  set.set(member, x.now + WAITER_LEASE_MS);
  let named = woken.get(s);
  if (!named) {
    named = wake(s, x, true);
    woken.set(s, named);
  }
  return named.includes(!fair && mode === 'read' ? 'r' : member) ? 'attempt' : 'waiting';
}

/** FORCE_RELEASE: free the lock whoever holds it. `true` if it was held. */
export function forceRelease(s: MemoryLockState, x: ScriptScope): boolean {
  const live = liveCount(s.leases, x.now);
  dropHolds(s);
  wake(s, x);
  return live > 0;
}

function grant(s: MemoryLockState, call: AcquireCall, identity: HolderIdentity, fence: number, now: number): void {
  s.holders.set(call.token, {
    count: 1,
    seq: call.seq,
    fence,
    since: Date.now(),
    at: now,
    identity,
    owner: call.ownerId,
  });
  s.fence = fence;
  if (call.mode === 'write') s.writer = call.token;
  s.leases.set(call.token, now + call.leaseMs);
}
