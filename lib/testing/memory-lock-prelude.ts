import { CLAIM_MS } from '../store/waiter-timing.js';
import type { LockMode } from '../types/lock.types.js';
import type { MemoryLockState, ScriptScope } from './memory-lock-world.js';

/*
 * The helpers the Lua scripts share (the LOCK_PRELUDE of `lib/redis/scripts/lock-prelude.ts`): purges of dead holders
 * and
 * waiters, the end of a lock's state, and wake-ups. Sorted sets are Maps of member -> score.
 */

/** Drops holders whose lease ran out. `true` if any was dropped. */
export function purge(s: MemoryLockState, now: number): boolean {
  let purged = false;
  for (const [token, expiry] of s.leases) {
    if (expiry > now) continue;
    s.holders.delete(token);
    if (s.writer === token) s.writer = undefined;
    s.leases.delete(token);
    purged = true;
  }
  return purged;
}

/** Drops fair-queue entries whose registration ran out. */
export function purgeQueue(s: MemoryLockState, now: number): void {
  for (const [member, expiry] of s.queue) if (expiry <= now) s.queue.delete(member);
}

/** After holders changed: the lock's state goes when nobody holds it (Redis: `DEL state leases`). */
export function settle(s: MemoryLockState): void {
  if (s.leases.size === 0) dropHolds(s);
}

export function dropHolds(s: MemoryLockState): void {
  s.holders.clear();
  s.leases.clear();
  s.writer = undefined;
  s.fence = 0;
}

/**
 * Wakes whoever can now get in: fair waiters first, by name (the head, or the run of readers at the head);
 * otherwise one waiting writer if the lock is free, else every waiting reader when no writer holds or waits.
 * A waiter woken by name has `CLAIM_MS` to take its turn: its registration is cut to run out then (one whose
 * registration runs out within the window already was woken: not again). Returns whom it woke: fair queue members,
 * a writer's id, or `'r'` (every non-fair reader).
 */
export function wake(s: MemoryLockState, x: ScriptScope, quiet = false): string[] {
  if (s.writers.size === 0 && s.readers.size === 0 && s.queue.size === 0) return [];
  if (s.writer !== undefined) return [];
  purgeQueue(s, x.now);
  const queue = [...s.queue.keys()].slice(0, 64);
  if (queue.length > 0) {
    const woken: string[] = [];
    if (queue[0].startsWith('w')) {
      if (s.leases.size === 0) woken.push(queue[0]);
    } else {
      for (const member of queue) {
        if (!member.startsWith('r')) break;
        woken.push(member);
      }
    }
    for (const member of woken) {
      // ZADD XX LT CH: Map.set keeps the member in its place in the queue.
      if (claim(s.queue, member, x.now)) x.publish({ waiterId: member.slice(2) });
    }
    return woken;
  }
  // ZRANGEBYSCORE writers (now +inf LIMIT 0 1: the live registration that runs out first.
  let first: [string, number] | undefined;
  for (const [id, expiry] of s.writers) {
    if (expiry > x.now && (!first || expiry < first[1] || (expiry === first[1] && id < first[0]))) first = [id, expiry];
  }
  if (first) {
    if (s.leases.size > 0) return [];
    if (claim(s.writers, first[0], x.now)) x.publish({ waiterId: first[0] });
    return [first[0]];
  }
  if (liveCount(s.readers, x.now) > 0) {
    // quiet (the heartbeat): readers learn it from their own heartbeat's answer, not from a repeated broadcast.
    if (!quiet) x.publish('readers');
    return ['r'];
  }
  return [];
}

/**
 * Cuts `member`'s registration to run out `CLAIM_MS` from now; `false` if it ran out sooner already (ZADD XX LT CH).
 */
function claim(zset: Map<string, number>, member: string, now: number): boolean {
  const score = zset.get(member) as number;
  if (score <= now + CLAIM_MS) return false;
  zset.set(member, now + CLAIM_MS);
  return true;
}

export function queueMember(mode: LockMode, waiterId: string): string {
  return `${mode === 'write' ? 'w' : 'r'}:${waiterId}`;
}

/** Entries of `zset` scored after `now` (ZCOUNT (now +inf). */
export function liveCount(zset: Map<string, number>, now: number): number {
  let n = 0;
  for (const score of zset.values()) if (score > now) n++;
  return n;
}

/** The highest score of `zset` (ZRANGE -1 -1 WITHSCORES). */
export function top(zset: Map<string, number>): number | undefined {
  let max: number | undefined;
  for (const score of zset.values()) if (max === undefined || score > max) max = score;
  return max;
}
