// The events of a history-checked run, one JSON object per line. Every process (each worker incarnation, the nemesis,
// the harness) appends to a file of its own with a synchronous write per event, so a SIGKILLed process loses nothing
// it had logged. `t` is `performance.timeOrigin + performance.now()` in milliseconds: one clock for every process of
// the machine, which the checker orders by; `w` is `Date.now()`, for people reading the files.
import { appendFileSync, closeSync, openSync, readdirSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

/** What a hold is: a lock (read or write), a semaphore permit, or a term of leadership. */
export type HoldKind = 'lock' | 'permit' | 'leader';

/** Where a hold stands, as its handle said (`LockHandle.state`, `PermitHandle.state`, `Leadership.state`). */
export type ObservedState = 'held' | 'in-doubt' | 'lost' | 'released';

interface Stamped {
  /** Common clock: `performance.timeOrigin + performance.now()`, in milliseconds. */
  readonly t: number;
  /** `Date.now()` when logged. */
  readonly w: number;
  /** Worker incarnation (`w3.1`), `nemesis` or `harness`. */
  readonly by: string;
}

/** A grant, logged as soon as `acquire`/`tryAcquire`/`acquirePermit` resolved or a campaign's function started. */
export interface GrantEvent extends Stamped {
  readonly e: 'grant';
  /** Unique per run: `<by>:<n>`. */
  readonly hold: string;
  readonly kind: HoldKind;
  readonly key: string;
  /** `'write'` for permits and leadership (each excludes others up to the limit). */
  readonly mode: 'read' | 'write';
  /** The fencing token (the term for leadership). */
  readonly fence: number;
  /** The holder's secret token (`''` for leadership, which does not expose it). */
  readonly token: string;
  readonly leaseMs: number;
  readonly autoExtend: boolean;
  /** Permits only: the limit in force. */
  readonly limit?: number;
  /** When the acquiring call was made (common clock): the grant happened in Redis between `calledAt` and `t`. */
  readonly calledAt: number;
}

/**
 * What the handle told its caller when sampled: `t` is taken before the reads, so the hold was in that state at `t`
 * or later. Read in this order: `isHeld`, `state`, `signal.aborted`.
 */
export interface ObservationEvent extends Stamped {
  readonly e: 'obs';
  readonly hold: string;
  /** Permits and locks: `isHeld`; leadership: `!signal.aborted` (it has no `isHeld`). */
  readonly isHeld: boolean;
  readonly state: ObservedState;
  readonly aborted: boolean;
  /** The abort reason's class name, once aborted. */
  readonly reason?: string;
}

/** A change the handle announced (`onStateChange`, or its signal's `abort` event as `'lost'`/`'aborted'`). */
export interface StateChangeEvent extends Stamped {
  readonly e: 'state';
  readonly hold: string;
  readonly state: string;
  readonly reason?: string;
}

/** The caller's `release()` (or the end of a term): `send` before the call, `done` after its reply. */
export interface ReleaseEvent extends Stamped {
  readonly e: 'release';
  readonly hold: string;
  readonly phase: 'send' | 'done';
  readonly result?: string;
}

/** An acquisition that failed (timeout, Redis unavailable, closed engine). */
export interface AcquireFailEvent extends Stamped {
  readonly e: 'acquire-fail';
  readonly kind: HoldKind;
  readonly key: string;
  readonly error: string;
}

/** A fenced write: `send` before the script, `done` with its outcome. `id` is unique per run. */
export interface WriteEvent extends Stamped {
  readonly e: 'write';
  readonly id: string;
  readonly hold: string;
  readonly key: string;
  readonly fence: number;
  readonly token: string;
  readonly phase: 'send' | 'done';
  readonly outcome?: 'accepted' | 'refused' | 'error';
  /** The port of the server that answered (`done`), to tell the nodes of a Sentinel set apart. */
  readonly node?: number;
}

/** The worker's `engine.close()`: `begin` when called, `done` when it resolved. */
export interface CloseEvent extends Stamped {
  readonly e: 'close';
  readonly phase: 'begin' | 'done';
}

/** A fault the nemesis injected (`begin`) and healed (`end`). */
export interface FaultEvent extends Stamped {
  readonly e: 'fault';
  readonly kind: string;
  readonly phase: 'begin' | 'end';
  readonly detail?: string;
  /** Redis lost its data set here (a kill of a server without persistence, a failover without waitForReplicas). */
  readonly dataLoss?: 'restart-without-persistence' | 'failover-without-waitForReplicas';
}

/** Run markers: the start, the quiet phase (no more faults), the end. */
export interface PhaseEvent extends Stamped {
  readonly e: 'phase';
  readonly phase: 'start' | 'quiet' | 'end';
  readonly seed?: number;
}

/** One accepted entry of the fenced store's list for `key`, in list order (read by the harness after the run). */
export interface StoreEvent extends Stamped {
  readonly e: 'store';
  readonly key: string;
  readonly entries: readonly { readonly id: string; readonly fence: number; readonly token: string }[];
}

export type HistoryEvent =
  | GrantEvent
  | ObservationEvent
  | StateChangeEvent
  | ReleaseEvent
  | AcquireFailEvent
  | WriteEvent
  | CloseEvent
  | FaultEvent
  | PhaseEvent
  | StoreEvent;

/** Distributes `Omit` over the union, so each event keeps its own fields. */
export type EventBody = HistoryEvent extends infer E
  ? E extends HistoryEvent
    ? Omit<E, 't' | 'w' | 'by'>
    : never
  : never;

/** The common clock, in milliseconds. */
export function now(): number {
  return performance.timeOrigin + performance.now();
}

/** One process's history file: every `log` is one synchronous `write` of one line. */
export class HistoryLog {
  private readonly fd: number;

  constructor(
    readonly file: string,
    readonly by: string,
  ) {
    this.fd = openSync(file, 'a');
  }

  /** Logs `body` stamped now (or at `t`, a time taken earlier, e.g. before an observation's reads). */
  log(body: EventBody, t = now()): void {
    writeSync(this.fd, `${JSON.stringify({ t, w: Date.now(), by: this.by, ...body })}\n`);
  }

  close(): void {
    closeSync(this.fd);
  }
}

/** Appends one event to `file` (for the harness's one-off records). */
export function appendEvent(file: string, by: string, body: EventBody): void {
  appendFileSync(file, `${JSON.stringify({ t: now(), w: Date.now(), by, ...body })}\n`);
}

/**
 * Every `*.jsonl` file of `dir`, merged and ordered by the common clock (ties: file order). A line cut short by a
 * SIGKILL mid-write (the last of its file) is skipped.
 */
export function readHistory(dir: string): HistoryEvent[] {
  const events: HistoryEvent[] = [];
  for (const name of readdirSync(dir).filter((n) => n.endsWith('.jsonl'))) {
    for (const line of readFileSync(join(dir, name), 'utf8').split('\n')) {
      if (!line) continue;
      try {
        events.push(JSON.parse(line) as HistoryEvent);
      } catch {
        // a torn last line
      }
    }
  }
  return events.sort((a, b) => a.t - b.t);
}
