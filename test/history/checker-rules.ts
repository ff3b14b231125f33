// The checker's rules over a HistoryModel. Each returns what it found: a violation, or (`excused`) an overlap that
// only the cases the docs name explain, reported by that name. A rule never gives a hold the benefit of the doubt
// beyond what the history proves: samples are timed before they are read, grants after their reply.
import { heldSpan, saysHeld } from './checker-model.js';
import type { HeldSpan, HistoryModel, HoldRecord } from './checker-model.js';
import type { HistoryEvent } from './history-events.js';

export interface Finding {
  /** The rule: `exclusion`, `permits`, `leader`, `fencing`, `fenced-writes`, `held-after-close`, `consistency`, `progress`. */
  readonly rule: string;
  readonly key: string;
  readonly at: number;
  readonly message: string;
  /** The offending events. */
  readonly events: readonly HistoryEvent[];
  /** The documented case that explains it (then it is reported, not failed). */
  readonly excused?: string;
}

export interface RuleOptions {
  /**
   * How much later one process's clock reading may be than another's for the same instant, in milliseconds: an
   * overlap of held spans up to this long is not counted. Default 2 (the `+ 2 ms` of the documented drift allowance;
   * the `leaseMs × 0.01` part is the library's own margin for a server clock that runs fast, not given again here).
   */
  readonly toleranceMs: number;
  /** After the quiet phase begins, how long keys may take to be granted again (leases running out), in ms. */
  readonly settleMs: number;
  /** Every key the workload uses, as `<kind>:<key>` (`lock:k0`, `permit:p0`, `leader:l0`), for `progress`. */
  readonly expectedKeys: readonly string[];
}

/** The drift allowance of a lease as the docs state it: `leaseMs × 0.01 + 2 ms`. */
export const driftAllowance = (leaseMs: number) => leaseMs * 0.01 + 2;

const conflicts = (a: HoldRecord, b: HoldRecord) => a.grant.mode === 'write' || b.grant.mode === 'write';

/**
 * Overlap of two spans, in milliseconds (negative: none), with the samples that show it: the later hold's first held
 * sample, and the earlier hold's first held sample after it (`strict`: one the docs do not excuse).
 */
function overlap(
  model: HistoryModel,
  a: HeldSpan,
  b: HeldSpan,
  strict: boolean,
): { ms: number; witness: HistoryEvent[] } {
  const [first, second] = a.from.t <= b.from.t ? [a, b] : [b, a];
  const ms = Math.min(first.to.t, second.to.t) - second.from.t;
  const late =
    first.hold.observations.find(
      (o) => saysHeld(o) && o.t > second.from.t && !(strict && model.excuse(first.hold, o)),
    ) ?? first.to;
  return { ms, witness: [first.hold.grant, second.hold.grant, second.from, late] };
}

/** Exclusion: no two conflicting holds of a key (a writer and anyone; two leaders) said held at the same time. */
export function checkExclusion(model: HistoryModel, options: RuleOptions): Finding[] {
  const out: Finding[] = [];
  for (const [key, holds] of model.holdsByKey(['lock', 'leader'])) {
    const rule = key.startsWith('leader:') ? 'leader' : 'exclusion';
    const spans = holds
      .map((h) => ({ full: heldSpan(model, h, false), strict: heldSpan(model, h, true) }))
      .filter((s): s is { full: HeldSpan; strict: HeldSpan | undefined } => s.full !== undefined)
      .sort((a, b) => a.full.from.t - b.full.from.t);
    for (let i = 0; i < spans.length; i++) {
      for (let j = i + 1; j < spans.length && spans[j].full.from.t <= spans[i].full.to.t; j++) {
        const [a, b] = [spans[i], spans[j]];
        if (!conflicts(a.full.hold, b.full.hold)) continue;
        const strict = a.strict && b.strict ? overlap(model, a.strict, b.strict, true) : undefined;
        const full = overlap(model, a.full, b.full, false);
        if (full.ms <= options.toleranceMs) continue;
        const failed = strict !== undefined && strict.ms > options.toleranceMs;
        const shown = failed ? strict : full;
        const first = shown.witness[0] as HoldRecord['grant'];
        const excused = failed ? undefined : excuseOf(model, a.full.hold, b.full.hold);
        out.push({
          rule,
          key,
          at: (shown.witness[2] as HistoryEvent).t,
          message:
            `${first.hold} said held ${shown.ms.toFixed(1)} ms into the hold of ${(shown.witness[1] as HoldRecord['grant']).hold}` +
            ` (drift allowance of its lease: ${driftAllowance(first.leaseMs).toFixed(1)} ms)`,
          events: shown.witness,
          ...(excused ? { excused } : {}),
        });
      }
    }
  }
  return out;
}

function excuseOf(model: HistoryModel, a: HoldRecord, b: HoldRecord): string {
  for (const h of [a, b]) {
    for (const o of h.observations) {
      const why = saysHeld(o) ? model.excuse(h, o) : undefined;
      if (why) return why;
    }
  }
  return 'unexplained';
}

/** Permits: never more holders of a semaphore said held at once than its limit. */
export function checkPermits(model: HistoryModel, options: RuleOptions): Finding[] {
  const out: Finding[] = [];
  for (const [key, holds] of model.holdsByKey(['permit'])) {
    const limit = Math.min(...holds.map((h) => h.grant.limit ?? Number.POSITIVE_INFINITY));
    for (const strict of [true, false]) {
      const found = sweep(
        holds.map((h) => heldSpan(model, h, strict)).filter((s) => s !== undefined),
        limit,
        options,
      );
      if (!found) continue;
      out.push({
        rule: 'permits',
        key,
        at: found.at,
        message: `${found.spans.length} permits said held at once (limit ${limit}): ${found.spans.map((s) => s.hold.grant.hold).join(', ')}`,
        events: found.spans.flatMap((s) => [s.hold.grant, s.from, s.to]),
        ...(strict ? {} : { excused: excuseOf(model, found.spans[0].hold, found.spans[1].hold) }),
      });
      break;
    }
  }
  return out;
}

function sweep(spans: HeldSpan[], limit: number, options: RuleOptions): { at: number; spans: HeldSpan[] } | undefined {
  const points = spans.flatMap((s) => [
    { t: s.from.t, d: 1, s },
    { t: s.to.t - options.toleranceMs, d: -1, s },
  ]);
  points.sort((a, b) => a.t - b.t || a.d - b.d);
  const active = new Set<HeldSpan>();
  for (const p of points) {
    if (p.d < 0) active.delete(p.s);
    else if (p.s.to.t - options.toleranceMs > p.t) active.add(p.s);
    if (active.size > limit) return { at: p.t, spans: [...active] };
  }
  return undefined;
}

/**
 * Fencing: tokens of one key are distinct, and a grant made (its call) after another's reply has a greater token.
 * Grants whose calls overlap are not ordered by the history, so only their distinctness is checked.
 */
export function checkFencing(model: HistoryModel): Finding[] {
  const out: Finding[] = [];
  for (const [key, holds] of model.holdsByKey(['lock', 'permit', 'leader'])) {
    const grants = holds.map((h) => h.grant).sort((a, b) => a.t - b.t);
    const seen = new Map<number, (typeof grants)[number]>();
    for (const g of grants) {
      const twin = seen.get(g.fence);
      if (twin) {
        out.push({
          rule: 'fencing',
          key,
          at: g.t,
          message: `${g.hold} got token ${g.fence}, as ${twin.hold} did`,
          events: [twin, g],
        });
      }
      seen.set(g.fence, g);
    }
    // Prefix maximum of tokens by reply time, then each grant against every grant replied before its call.
    let best: (typeof grants)[number] | undefined;
    const prefix = grants.map((g) => (best = !best || g.fence > best.fence ? g : best));
    for (const g of grants) {
      let lo = 0;
      let hi = grants.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (grants[mid].t < g.calledAt) lo = mid + 1;
        else hi = mid;
      }
      const before = lo > 0 ? prefix[lo - 1] : undefined;
      if (before && before.fence >= g.fence && before !== g) {
        const lost = documentedRegression(model, before.t, g.t);
        out.push({
          rule: 'fencing',
          key,
          at: g.t,
          message: `${g.hold} got token ${g.fence}, not above ${before.fence} of ${before.hold} granted before it was asked for (${(before.fence - g.fence).toFixed(0)} lower)`,
          events: [before, g],
          ...(lost ? { excused: lost } : {}),
        });
      }
    }
  }
  return out;
}

/**
 * The cases in which the docs say tokens may go back: a failover without `waitForReplicas` that lost the last grant,
 * and a restart without persistence once the server's clock stepped back ("tokens keep increasing across restarts
 * unless the server's clock steps back while a key is free"), between the two grants.
 */
function documentedRegression(model: HistoryModel, from: number, to: number): string | undefined {
  const between = model.dataLosses.filter((l) => l.at > from && l.at < to);
  if (between.some((l) => l.name === 'failover-without-waitForReplicas')) return 'failover-without-waitForReplicas';
  const steppedBack = model.faults.some((f) => f.kind === 'clock-step-back' && f.phase === 'begin' && f.t < to);
  return steppedBack && between.length > 0 ? 'restart-without-persistence-after-clock-step-back' : undefined;
}
