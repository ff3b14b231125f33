import { performance } from 'node:perf_hooks';
import type { AlarmScope } from './alarm-scope.js';
import type { Hold } from '../holds/hold.js';
import { kindOf } from '../events/lock-events.js';
import type { HeldTooLongEvent } from '../events/lock-events.js';
import type { LockInfo } from '../../types/lock.types.js';
import type { WaitRecord } from '../acquire/waiting.js';

/** Identity of this process, for holder-side reports. */
export interface ProcessIdentity {
  readonly host: string;
  readonly pid: number;
  readonly app: string;
}

/**
 * The deadlock alarm: one timer that reports, once each, a hold kept longer than `holdWarningMs` and a waiter
 * waiting longer than `waitWarningMs` (with the current holders' identities, read from Redis). `0` turns a
 * threshold off. Holds and waits outside `scope` (leaderships, by default) are not reported.
 */
export class DeadlockAlarm {
  private timer: NodeJS.Timeout | undefined;
  private readonly holdAlarmed = new WeakSet<Hold>();

  private readonly holdWarningMs: number;
  private readonly waitWarningMs: number;

  constructor(
    thresholds: { readonly holdWarningMs: number; readonly waitWarningMs: number },
    private readonly identity: ProcessIdentity,
    private readonly holds: { list(): Iterable<Hold> },
    private readonly waits: { records(): Iterable<WaitRecord> },
    private readonly inspect: (key: string) => Promise<LockInfo | null>,
    private readonly report: (event: HeldTooLongEvent) => void,
    private readonly scope: AlarmScope,
  ) {
    this.holdWarningMs = thresholds.holdWarningMs;
    this.waitWarningMs = thresholds.waitWarningMs;
  }

  /** Starts checking (if any threshold is on) at a quarter of the smallest threshold, between 50 ms and 5 s. */
  start(): void {
    const thresholds = [this.holdWarningMs, this.waitWarningMs].filter((t) => t > 0);
    if (thresholds.length === 0 || this.timer) return;
    const every = Math.min(5_000, Math.max(50, Math.min(...thresholds) / 4));
    this.timer = setInterval(() => this.check(), every);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One pass over holds and waiters. */
  check(): void {
    const now = performance.now();
    if (this.holdWarningMs > 0) {
      for (const hold of this.holds.list()) {
        const heldMs = now - hold.acquiredAt;
        if (heldMs < this.holdWarningMs || this.holdAlarmed.has(hold) || !hold.active) continue;
        if (!this.scope.covers(hold.key)) continue;
        this.holdAlarmed.add(hold);
        this.report({
          key: hold.key,
          kind: kindOf(hold.lock),
          mode: hold.mode,
          owner: hold.owner.id,
          detectedBy: 'holder',
          heldMs,
          waitedMs: 0,
          holders: [{ owner: hold.owner.id, ...this.identity, mode: hold.mode, since: new Date(Date.now() - heldMs) }],
        });
      }
    }
    if (this.waitWarningMs > 0) {
      for (const wait of this.waits.records()) {
        const waitedMs = now - wait.startedAt;
        if (waitedMs < this.waitWarningMs || wait.alarmed || !this.scope.covers(wait.key)) continue;
        wait.alarmed = true;
        this.inspect(wait.key)
          .then((info) => {
            const holders = (info?.holders ?? []).map((h) => ({
              owner: h.owner,
              host: h.host,
              pid: h.pid,
              app: h.app,
              mode: h.mode,
              since: h.since,
            }));
            const oldest = holders.reduce((min, h) => Math.min(min, h.since.getTime()), Date.now());
            this.report({
              key: wait.key,
              kind: wait.kind,
              mode: wait.mode,
              owner: wait.owner,
              detectedBy: 'waiter',
              heldMs: Date.now() - oldest,
              waitedMs,
              holders,
            });
          })
          .catch(() => {
            this.report({
              key: wait.key,
              kind: wait.kind,
              mode: wait.mode,
              owner: wait.owner,
              detectedBy: 'waiter',
              heldMs: 0,
              waitedMs,
              holders: [],
            });
          });
      }
    }
  }
}

/** One line for the log: who holds what, for how long. */
export function describeHeldTooLong(e: HeldTooLongEvent): string {
  const who =
    e.holders.length === 0
      ? 'no holder visible in Redis'
      : e.holders
          .map(
            (h) =>
              `${h.mode} by ${h.owner} on ${h.host} pid ${h.pid}${h.app ? ` (${h.app})` : ''} since ${h.since.toISOString()}`,
          )
          .join('; ');
  return e.detectedBy === 'holder'
    ? `lock "${e.key}" (${e.mode}) held for ${Math.round(e.heldMs)} ms by ${e.owner}: ${who}`
    : `waiting ${Math.round(e.waitedMs)} ms for the ${e.mode} lock on "${e.key}" (owner ${e.owner}); held by: ${who}`;
}
