import { LEADER_KEY_PREFIX } from '../leader/leader-options.js';
import type { BoardEntry, BoardLeader } from './snapshot.types.js';

/** The board's kind of a lock on `leader:<name>`: a leadership (see docs/leader-election.md). */
export const LEADER_KIND_NAME = 'leader';

/** Whether `key` is a leadership's lock key. */
export function isLeaderKey(key: string): boolean {
  return key.startsWith(LEADER_KEY_PREFIX) && key.length > LEADER_KEY_PREFIX.length;
}

/**
 * The leaders among `entries`: one per leadership lock that a writer holds (and has not finished with), its holder
 * the leader and its fencing token the term. Sorted by name.
 */
export function leadersOf(entries: readonly BoardEntry[]): BoardLeader[] {
  const leaders: BoardLeader[] = [];
  for (const entry of entries) {
    if (entry.kind !== LEADER_KIND_NAME) continue;
    const holder = entry.holders.find((h) => h.mode === 'write' && !h.finished);
    if (!holder) continue;
    leaders.push({
      name: entry.key.slice(LEADER_KEY_PREFIX.length),
      key: entry.key,
      owner: holder.owner,
      app: holder.app,
      host: holder.host,
      pid: holder.pid,
      term: holder.fencingToken,
      since: holder.since,
      heldMs: holder.heldMs,
      remainingLeaseMs: holder.remainingLeaseMs,
      standbys: entry.waiting,
    });
  }
  return leaders.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
