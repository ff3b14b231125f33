import { hostname } from 'node:os';
import type { LockEngine } from '../locking/engine/lock-engine.js';
import type { BoardEvent } from '../read-model/snapshot.types.js';

/** Events kept by default. */
export const DEFAULT_RECENT_EVENTS = 50;

type Recorded = Omit<BoardEvent, 'id' | 'host' | 'pid'>;

/**
 * The recent lock events of this process, for the board's live list: a ring of the last `capacity` events
 * (acquired, released, lost, timed out, the deadlock alarm, force releases from the board), each labelled with the
 * instance (host, pid) that saw it, since behind a load balancer each refresh may reach another instance. Recording
 * is a few field copies per event; nothing is kept beyond the ring.
 */
export class RecentEvents {
  private readonly ring: BoardEvent[] = [];
  private nextId = 1;
  private readonly host = hostname();
  private readonly unsubscribe: (() => void)[] = [];

  constructor(private readonly capacity = DEFAULT_RECENT_EVENTS) {}

  /** Starts recording `engine`'s events. */
  attach(engine: Pick<LockEngine, 'on'>): void {
    const at = () => new Date().toISOString();
    this.unsubscribe.push(
      engine.on('acquired', (e) =>
        this.add({
          type: 'acquired',
          key: e.key,
          mode: e.mode,
          owner: e.owner,
          at: at(),
          detail: `${e.reentrant ? 're-entered' : 'waited'} ${ms(e.waitedMs)}`,
        }),
      ),
      engine.on('released', (e) =>
        this.add({
          type: 'released',
          key: e.key,
          mode: e.mode,
          owner: e.owner,
          at: at(),
          detail: `held ${ms(e.heldMs)}`,
        }),
      ),
      engine.on('lost', (e) =>
        this.add({
          type: 'lost',
          key: e.key,
          mode: e.mode,
          owner: e.owner,
          at: at(),
          detail: `${e.error.reason} after ${ms(e.heldMs)}`,
        }),
      ),
      engine.on('timeout', (e) =>
        this.add({
          type: 'timeout',
          key: e.key,
          mode: e.mode,
          owner: e.owner,
          at: at(),
          detail: `gave up after ${ms(e.waitedMs)}`,
        }),
      ),
      engine.on('held-too-long', (e) =>
        this.add({
          // A waiter's alarm is a wait past waitWarningMs, not a hold: the page says so.
          type: e.detectedBy === 'holder' ? 'held-too-long' : 'waited-too-long',
          key: e.key,
          mode: e.mode,
          owner: e.owner,
          at: at(),
          detail: e.detectedBy === 'holder' ? `held ${ms(e.heldMs)}` : `waiting ${ms(e.waitedMs)}`,
        }),
      ),
    );
  }

  /** Records one event (the board adds its force releases here). */
  add(event: Recorded): BoardEvent {
    const full: BoardEvent = { id: this.nextId++, ...event, host: this.host, pid: process.pid };
    this.ring.push(full);
    if (this.ring.length > this.capacity) this.ring.shift();
    return full;
  }

  /** The events kept, newest first. */
  list(): readonly BoardEvent[] {
    return [...this.ring].reverse();
  }

  /** Stops recording. */
  detach(): void {
    for (const off of this.unsubscribe.splice(0)) off();
  }
}

function ms(value: number): string {
  return value >= 10_000 ? `${(value / 1000).toFixed(1)} s` : `${Math.round(value)} ms`;
}
