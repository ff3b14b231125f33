// The checker's view of a merged history: each hold with its grant and what its handle said, the faults that lost
// Redis's data, and the run's phases. Built once; the rules (checker-rules.ts) read it.
import type {
  CloseEvent,
  FaultEvent,
  GrantEvent,
  HistoryEvent,
  ObservationEvent,
  PhaseEvent,
  StoreEvent,
  WriteEvent,
} from './history-events.js';

/** A moment Redis lost grants: `at` the kill (or failover), `name` how the docs name the case. */
export interface DataLoss {
  readonly at: number;
  /** When the fault ended (the server answered again, or the failover was done); `Infinity` if it never did. */
  until: number;
  readonly name: NonNullable<FaultEvent['dataLoss']>;
  readonly fault: FaultEvent;
}

export interface HoldRecord {
  readonly grant: GrantEvent;
  /** Every sample of its handle, in time order. */
  readonly observations: ObservationEvent[];
  /** When the worker's engine was closed under it (`close` `done` of the same incarnation), if it was. */
  closedAt: number | undefined;
}

/** What a sample says to a caller who reads any of its indicators: `isHeld`, or `state` held / in doubt. */
export function saysHeld(o: ObservationEvent): boolean {
  return o.isHeld || o.state === 'held' || o.state === 'in-doubt';
}

export class HistoryModel {
  readonly holds = new Map<string, HoldRecord>();
  readonly dataLosses: DataLoss[] = [];
  readonly faults: FaultEvent[] = [];
  readonly writes: WriteEvent[] = [];
  readonly stores: StoreEvent[] = [];
  readonly closes: CloseEvent[] = [];
  readonly phases: PhaseEvent[] = [];
  /** Events a rule may cite, by kind, for the operation counts. */
  readonly counts: Record<string, number> = {};

  constructor(readonly events: readonly HistoryEvent[]) {
    const closeDone = new Map<string, number>();
    for (const e of events) {
      const label =
        e.e === 'grant' ? `grant:${e.kind}:${e.mode}` : e.e === 'write' ? `write:${e.phase}:${e.outcome ?? ''}` : e.e;
      this.counts[label] = (this.counts[label] ?? 0) + 1;
      switch (e.e) {
        case 'grant':
          this.holds.set(e.hold, { grant: e, observations: [], closedAt: undefined });
          break;
        case 'obs':
          this.holds.get(e.hold)?.observations.push(e);
          break;
        case 'fault':
          this.faults.push(e);
          if (e.phase === 'begin' && e.dataLoss)
            this.dataLosses.push({ at: e.t, until: Number.POSITIVE_INFINITY, name: e.dataLoss, fault: e });
          if (e.phase === 'end') {
            const open = this.dataLosses.find((l) => l.fault.kind === e.kind && l.until === Number.POSITIVE_INFINITY);
            if (open) open.until = e.t;
          }
          break;
        case 'write':
          this.writes.push(e);
          break;
        case 'store':
          this.stores.push(e);
          break;
        case 'close':
          this.closes.push(e);
          if (e.phase === 'done') closeDone.set(e.by, e.t);
          break;
        case 'phase':
          this.phases.push(e);
          break;
        default:
          break;
      }
    }
    for (const h of this.holds.values()) h.closedAt = closeDone.get(h.grant.by);
  }

  /** The holds of each key of `kinds`, by `<kind>:<key>`. */
  holdsByKey(kinds: readonly GrantEvent['kind'][]): Map<string, HoldRecord[]> {
    const out = new Map<string, HoldRecord[]>();
    for (const h of this.holds.values()) {
      if (!kinds.includes(h.grant.kind)) continue;
      const k = `${h.grant.kind}:${h.grant.key}`;
      const list = out.get(k) ?? [];
      list.push(h);
      out.set(k, list);
    }
    return out;
  }

  /**
   * Why a held sample of `hold` is one the docs name, or `undefined`. The hold must be exposed to a loss of Redis's
   * data set: asked for before the loss and granted before the server answered again (so the lost server may have
   * granted it), sampled after the loss. Then the sample is excused when the loss was a failover without
   * `waitForReplicas` (the docs' case), when the handle said `'in-doubt'` (it told its caller it could not confirm the
   * hold), or when it is the hold's first sample since the loss while an earlier one preceded it (its process had
   * not run since, so it could not have learnt of the loss).
   */
  excuse(hold: HoldRecord, o: ObservationEvent): string | undefined {
    for (const loss of this.dataLosses) {
      const exposed = hold.grant.calledAt < loss.at && hold.grant.t < loss.until;
      if (!exposed || o.t <= loss.at) continue;
      if (loss.name === 'failover-without-waitForReplicas') return loss.name;
      if (o.state === 'in-doubt') return loss.name;
      const before = hold.observations.some((p) => p.t < loss.at);
      const since = hold.observations.some((p) => p.t > loss.at && p.t < o.t);
      if (before && !since) return loss.name;
    }
    return undefined;
  }

  /** The time the quiet phase (no faults) began, if the run had one. */
  get quietAt(): number | undefined {
    return this.phases.find((p) => p.phase === 'quiet')?.t;
  }

  get endAt(): number | undefined {
    return this.phases.find((p) => p.phase === 'end')?.t;
  }
}

/** Held span of a hold: from its first to its last sample that said held (`strict`: those not excused only). */
export interface HeldSpan {
  readonly hold: HoldRecord;
  readonly from: ObservationEvent;
  readonly to: ObservationEvent;
}

/** The held span of `hold`, over all its held samples or (`strict`) over those the docs do not excuse. */
export function heldSpan(model: HistoryModel, hold: HoldRecord, strict: boolean): HeldSpan | undefined {
  let from: ObservationEvent | undefined;
  let to: ObservationEvent | undefined;
  for (const o of hold.observations) {
    if (!saysHeld(o) || (strict && model.excuse(hold, o))) continue;
    from ??= o;
    to = o;
  }
  return from && to ? { hold, from, to } : undefined;
}
