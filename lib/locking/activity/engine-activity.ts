import { LEADER_KEY_PREFIX } from '../../leader/leader-options.js';
import type { AlarmScope } from './alarm-scope.js';
import type { Hold } from '../holds/hold.js';
import { kindOf } from '../events/lock-events.js';
import type { WaitRecord } from '../acquire/waiting.js';
import type { LoadKind, LockLoad } from '../../types/load.types.js';

/** The kinds, in the order the gauges, the health details and the board report them. */
export const LOAD_KINDS: readonly LoadKind[] = Object.freeze(['lock', 'semaphore', 'leader'] as const);

/**
 * This engine's holds and waits as they are right now, one view for the deadlock alarm, the board and the gauges. A
 * `load()` walks the kept holds and the waits once, in this process (no Redis call).
 */
export class EngineActivity {
  constructor(
    private readonly kept: { list(): Iterable<Hold> },
    private readonly room: { records(): Iterable<WaitRecord> },
    private readonly scope: AlarmScope,
  ) {}

  /** Whether the deadlock alarm, and the board's highlights, report holds of and waits for `key`. */
  alarmsCover(key: string): boolean {
    return this.scope.covers(key);
  }

  /** Has leadership `key` reported by the alarm too (a campaign's `alarms: true`) until the returned function runs. */
  includeInAlarms(key: string): () => void {
    return this.scope.include(key);
  }

  /** The holds kept now (released or lost ones may still be listed until they leave). */
  holds(): Iterable<Hold> {
    return this.kept.list();
  }

  /** The acquisitions waiting now. */
  waits(): Iterable<WaitRecord> {
    return this.room.records();
  }

  /** How many holds and waiters of each kind this process has now. */
  load(): LockLoad {
    const holds = { lock: 0, semaphore: 0, leader: 0 };
    const waiters = { lock: 0, semaphore: 0, leader: 0 };
    const inDoubt = { lock: 0, semaphore: 0, leader: 0 };
    for (const hold of this.kept.list()) {
      if (hold.ended || hold.lost) continue;
      const kind = loadKindOf(kindOf(hold.lock), hold.key);
      holds[kind]++;
      if (hold.doubtSince !== undefined) inDoubt[kind]++;
    }
    for (const wait of this.room.records()) waiters[loadKindOf(wait.kind, wait.key)]++;
    return { holds, waiters, inDoubt };
  }

  /** The holds in doubt now: key and owner id, at most `max` of them. */
  inDoubt(max: number): { readonly key: string; readonly owner: string }[] {
    const out: { key: string; owner: string }[] = [];
    for (const hold of this.kept.list()) {
      if (out.length >= max) break;
      if (!hold.ended && !hold.lost && hold.doubtSince !== undefined) out.push({ key: hold.key, owner: hold.owner.id });
    }
    return out;
  }
}

/** The gauges' kind of a lock or semaphore key: a lock on `leader:<name>` is a leadership. */
export function loadKindOf(kind: 'lock' | 'semaphore', key: string): LoadKind {
  return kind === 'semaphore' ? 'semaphore' : key.startsWith(LEADER_KEY_PREFIX) ? 'leader' : 'lock';
}
