// More rules over a HistoryModel: the fenced store, holds said held after their engine was closed, samples that
// contradict themselves or a loss, and progress once the faults stopped.
import { saysHeld } from './checker-model.js';
import type { HistoryModel } from './checker-model.js';
import type { Finding, RuleOptions } from './checker-rules.js';
import type { HistoryEvent, WriteEvent } from './history-events.js';

/**
 * Fenced writes: every write the store accepted is in its list exactly once, none it refused or never got is, a write
 * whose outcome is unknown (an error) is there at most once, and the list runs in token order (equal tokens: one
 * holder). An accepted write missing after Redis lost its data set is reported by that name.
 */
export function checkFencedWrites(model: HistoryModel): Finding[] {
  const out: Finding[] = [];
  const sent = new Map<string, WriteEvent>();
  const done = new Map<string, WriteEvent>();
  for (const w of model.writes) (w.phase === 'send' ? sent : done).set(w.id, w);
  const applied = new Map<string, number>();
  for (const store of model.stores) {
    let previous: (typeof store.entries)[number] | undefined;
    for (const entry of store.entries) {
      applied.set(entry.id, (applied.get(entry.id) ?? 0) + 1);
      const origin = sent.get(entry.id);
      const fail = (message: string, events: HistoryEvent[]) =>
        out.push({
          rule: 'fenced-writes',
          key: store.key,
          at: origin?.t ?? store.t,
          message,
          events: [...events, store],
        });
      if (!origin) fail(`write ${entry.id} is in the store but was never sent`, []);
      else if (done.get(entry.id)?.outcome === 'refused')
        fail(`write ${entry.id} was refused but is in the store`, [origin]);
      if (
        previous &&
        (entry.fence < previous.fence || (entry.fence === previous.fence && entry.token !== previous.token))
      )
        fail(
          `write ${entry.id} (token ${entry.fence}) follows ${previous.id} (token ${previous.fence}) in the store`,
          origin ? [origin] : [],
        );
      previous = entry;
    }
  }
  for (const [id, count] of applied) {
    if (count > 1) {
      const origin = sent.get(id);
      out.push({
        rule: 'fenced-writes',
        key: origin?.key ?? '?',
        at: origin?.t ?? 0,
        message: `write ${id} applied ${count} times`,
        events: origin ? [origin] : [],
      });
    }
  }
  if (model.stores.length === 0) return out;
  for (const [id, w] of done) {
    if (w.outcome !== 'accepted' || applied.has(id)) continue;
    const loss = model.dataLosses.find((l) => l.at > w.t);
    out.push({
      rule: 'fenced-writes',
      key: w.key,
      at: w.t,
      message: `write ${id} (token ${w.fence}) was accepted but is not in the store`,
      events: [sent.get(id) ?? w, w],
      ...(loss ? { excused: loss.name } : {}),
    });
  }
  return out;
}

/** A hold the library released at shutdown is not said held once `close()` resolved. */
export function checkHeldAfterClose(model: HistoryModel): Finding[] {
  const out: Finding[] = [];
  for (const h of model.holds.values()) {
    if (h.closedAt === undefined) continue;
    const late = h.observations.find((o) => o.t > (h.closedAt as number) && saysHeld(o));
    if (late) {
      out.push({
        rule: 'held-after-close',
        key: `${h.grant.kind}:${h.grant.key}`,
        at: late.t,
        message: `${h.grant.hold} said held ${(late.t - (h.closedAt as number)).toFixed(0)} ms after engine.close() resolved`,
        events: [h.grant, ...model.closes.filter((c) => c.by === h.grant.by), late],
      });
    }
  }
  return out;
}

/**
 * Consistency of what a handle says: a hold that was said not held (lost, released) is never said held again, and one
 * sample does not contradict itself (`isHeld` false but state held or in doubt; state `'lost'` with the signal not
 * aborted). Read order is `isHeld`, `state`, `signal.aborted`, so a loss between two reads is not a contradiction.
 */
export function checkConsistency(model: HistoryModel): Finding[] {
  const out: Finding[] = [];
  for (const h of model.holds.values()) {
    const key = `${h.grant.kind}:${h.grant.key}`;
    let ended: (typeof h.observations)[number] | undefined;
    for (const o of h.observations) {
      if (ended && saysHeld(o)) {
        out.push({
          rule: 'consistency',
          key,
          at: o.t,
          message: `${h.grant.hold} said held again after it was not`,
          events: [ended, o],
        });
        break;
      }
      if (!saysHeld(o)) ended ??= o;
      const contradicts =
        (!o.isHeld && (o.state === 'held' || o.state === 'in-doubt')) || (o.state === 'lost' && !o.aborted);
      if (contradicts) {
        out.push({
          rule: 'consistency',
          key,
          at: o.t,
          message: `${h.grant.hold} sample contradicts itself`,
          events: [o],
        });
        break;
      }
    }
  }
  return out;
}

/** Progress: once the faults stopped (and `settleMs` passed), every key of the workload is granted again. */
export function checkProgress(model: HistoryModel, options: RuleOptions): Finding[] {
  const quiet = model.quietAt;
  if (quiet === undefined) return [];
  const since = quiet + options.settleMs;
  const granted = new Set<string>();
  for (const h of model.holds.values()) if (h.grant.t > since) granted.add(`${h.grant.kind}:${h.grant.key}`);
  const phase = model.phases.find((p) => p.phase === 'quiet');
  return options.expectedKeys
    .filter((k) => !granted.has(k))
    .map((key) => ({
      rule: 'progress',
      key,
      at: since,
      message: `${key} was not granted in the quiet phase (from ${options.settleMs} ms after the faults stopped)`,
      events: phase ? [phase] : [],
    }));
}
