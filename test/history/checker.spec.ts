// The checker on small hand-written histories: for each rule, one history that must pass and one that must fail.
import { describe, expect, it } from '@jest/globals';
import { checkHistory } from './checker.js';
import type { RuleOptions } from './checker.js';
import type { EventBody, HistoryEvent, ObservationEvent } from './history-events.js';

const at = (t: number, by: string, body: EventBody): HistoryEvent => ({ t, w: t, by, ...body }) as HistoryEvent;

function grant(
  t: number,
  hold: string,
  fence: number,
  extra: Partial<{
    key: string;
    kind: 'lock' | 'permit' | 'leader';
    mode: 'read' | 'write';
    calledAt: number;
    limit: number;
  }> = {},
): HistoryEvent {
  const by = hold.split(':')[0];
  return at(t, by, {
    e: 'grant',
    hold,
    kind: extra.kind ?? 'lock',
    key: extra.key ?? 'k',
    mode: extra.mode ?? 'write',
    fence,
    token: `tok-${hold}`,
    leaseMs: 1_000,
    autoExtend: true,
    calledAt: extra.calledAt ?? t - 1,
    ...(extra.limit ? { limit: extra.limit } : {}),
  });
}

function obs(
  t: number,
  hold: string,
  state: ObservationEvent['state'] = 'held',
  isHeld = state === 'held' || state === 'in-doubt',
) {
  return at(t, hold.split(':')[0], { e: 'obs', hold, isHeld, state, aborted: state === 'lost' });
}

/** A hold sampled held every 10 ms over [from, to]. */
function heldFrom(
  hold: string,
  fence: number,
  from: number,
  to: number,
  extra: Parameters<typeof grant>[3] = {},
): HistoryEvent[] {
  const out = [grant(from, hold, fence, extra)];
  for (let t = from; t <= to; t += 10) out.push(obs(t, hold));
  return out;
}

const check = (events: HistoryEvent[], options: Partial<RuleOptions> = {}) =>
  checkHistory(
    [...events].sort((a, b) => a.t - b.t),
    options,
  );
const rules = (events: HistoryEvent[], options: Partial<RuleOptions> = {}) =>
  check(events, options).violations.map((v) => v.rule);

describe('history checker', () => {
  describe('exclusion', () => {
    it('passes writers one after the other, and readers together', () => {
      expect(
        rules([...heldFrom('a:1', 1, 0, 100), obs(110, 'a:1', 'released', false), ...heldFrom('b:1', 2, 120, 200)]),
      ).toEqual([]);
      expect(
        rules([...heldFrom('a:1', 1, 0, 100, { mode: 'read' }), ...heldFrom('b:1', 2, 50, 200, { mode: 'read' })]),
      ).toEqual([]);
    });

    it('fails a holder said held after another was granted, and a reader beside a writer', () => {
      expect(rules([...heldFrom('a:1', 1, 0, 100), ...heldFrom('b:1', 2, 90, 200)])).toEqual(['exclusion']);
      expect(rules([...heldFrom('a:1', 1, 0, 100, { mode: 'read' }), ...heldFrom('b:1', 2, 50, 200)])).toEqual([
        'exclusion',
      ]);
    });

    it('tolerates an overlap within the clock tolerance only', () => {
      const events = [...heldFrom('a:1', 1, 0, 100), ...heldFrom('b:1', 2, 99, 200)];
      expect(rules(events)).toEqual([]);
      expect(rules(events, { toleranceMs: 0 })).toEqual(['exclusion']);
    });

    it('names an overlap in doubt after Redis lost its data, and fails one said held again', () => {
      const loss = at(150, 'nemesis', {
        e: 'fault',
        kind: 'redis-restart-none',
        phase: 'begin',
        dataLoss: 'restart-without-persistence',
      });
      const inDoubt = [
        ...heldFrom('a:1', 1, 0, 140),
        obs(160, 'a:1', 'in-doubt'),
        obs(300, 'a:1', 'in-doubt'),
        obs(400, 'a:1', 'lost', false),
      ];
      const report = check([loss, ...inDoubt, ...heldFrom('b:1', 2, 250, 500)]);
      expect(report.violations).toEqual([]);
      expect(report.excused.map((f) => [f.rule, f.excused])).toEqual([['exclusion', 'restart-without-persistence']]);
      const backToHeld = [...heldFrom('a:1', 1, 0, 140), obs(160, 'a:1', 'in-doubt'), obs(300, 'a:1', 'held')];
      expect(rules([loss, ...backToHeld, ...heldFrom('b:1', 2, 250, 500)])).toEqual(['exclusion']);
    });

    it('excuses no hold granted after the server answered again, though asked for before the loss', () => {
      const lost = { kind: 'redis-restart-none', dataLoss: 'restart-without-persistence' as const };
      const loss = [
        at(150, 'nemesis', { e: 'fault', phase: 'begin', ...lost }),
        at(200, 'nemesis', { e: 'fault', phase: 'end', kind: lost.kind }),
      ];
      const late = [grant(250, 'a:1', 1, { calledAt: 100 }), obs(250, 'a:1', 'in-doubt'), obs(400, 'a:1', 'in-doubt')];
      expect(rules([...loss, ...late, ...heldFrom('b:1', 2, 300, 500)])).toEqual(['exclusion']);
    });

    it('checks leaders the same way', () => {
      const leader = { kind: 'leader' as const, key: 'l' };
      expect(rules([...heldFrom('a:1', 1, 0, 100, leader), ...heldFrom('b:1', 2, 110, 200, leader)])).toEqual([]);
      expect(rules([...heldFrom('a:1', 1, 0, 100, leader), ...heldFrom('b:1', 2, 50, 200, leader)])).toEqual([
        'leader',
      ]);
    });
  });

  describe('permits', () => {
    const permit = { kind: 'permit' as const, key: 'p', limit: 2 };
    it('passes up to the limit at once', () => {
      expect(
        rules([
          ...heldFrom('a:1', 1, 0, 100, permit),
          ...heldFrom('b:1', 2, 10, 100, permit),
          ...heldFrom('c:1', 3, 110, 200, permit),
        ]),
      ).toEqual([]);
    });
    it('fails one more than the limit', () => {
      expect(
        rules([
          ...heldFrom('a:1', 1, 0, 100, permit),
          ...heldFrom('b:1', 2, 10, 100, permit),
          ...heldFrom('c:1', 3, 50, 200, permit),
        ]),
      ).toEqual(['permits']);
    });
  });

  describe('fencing', () => {
    it('passes increasing tokens, and calls that overlap in any token order', () => {
      expect(rules([grant(10, 'a:1', 5), grant(20, 'b:1', 6, { calledAt: 15 })])).toEqual([]);
      expect(rules([grant(10, 'a:1', 6, { calledAt: 0 }), grant(20, 'b:1', 5, { calledAt: 5 })])).toEqual([]);
    });
    it('fails a token that goes back, and a token given twice', () => {
      expect(rules([grant(10, 'a:1', 6), grant(20, 'b:1', 5, { calledAt: 15 })])).toEqual(['fencing']);
      expect(rules([grant(10, 'a:1', 6, { calledAt: 0 }), grant(20, 'b:1', 6, { calledAt: 5 })])).toEqual(['fencing']);
    });
  });

  describe('fenced writes', () => {
    const write = (t: number, id: string, fence: number, outcome: 'accepted' | 'refused' | 'error') => [
      at(t, 'a', { e: 'write', id, hold: 'a:1', key: 'k', fence, token: 'x', phase: 'send' }),
      at(t + 1, 'a', { e: 'write', id, hold: 'a:1', key: 'k', fence, token: 'x', phase: 'done', outcome }),
    ];
    const store = (ids: [string, number][]) =>
      at(1_000, 'harness', { e: 'store', key: 'k', entries: ids.map(([id, fence]) => ({ id, fence, token: 'x' })) });
    it('passes accepted writes applied once, in token order', () => {
      expect(
        rules([
          ...write(10, 'w1', 1, 'accepted'),
          ...write(20, 'w2', 2, 'accepted'),
          ...write(30, 'w3', 1, 'refused'),
          store([
            ['w1', 1],
            ['w2', 2],
          ]),
        ]),
      ).toEqual([]);
    });
    it('fails a write applied twice, a refused one applied, an accepted one missing', () => {
      const w = [...write(10, 'w1', 1, 'accepted'), ...write(20, 'w2', 2, 'refused')];
      expect(
        rules([
          ...w,
          store([
            ['w1', 1],
            ['w1', 1],
          ]),
        ]),
      ).toEqual(['fenced-writes']);
      expect(
        rules([
          ...w,
          store([
            ['w1', 1],
            ['w2', 2],
          ]),
        ]),
      ).toEqual(['fenced-writes']);
      expect(rules([...w, store([])])).toEqual(['fenced-writes']);
    });
  });

  describe('held after close', () => {
    const close = (t: number, phase: 'begin' | 'done') => at(t, 'a', { e: 'close', phase });
    it('passes a hold that ends with the close', () => {
      expect(
        rules([
          ...heldFrom('a:1', 1, 0, 100),
          close(101, 'begin'),
          obs(120, 'a:1', 'released', false),
          close(130, 'done'),
          obs(140, 'a:1', 'released', false),
        ]),
      ).toEqual([]);
    });
    it('fails a hold still said held after close resolved', () => {
      expect(rules([...heldFrom('a:1', 1, 0, 100), close(101, 'begin'), close(130, 'done'), obs(140, 'a:1')])).toEqual([
        'held-after-close',
      ]);
    });
  });

  describe('consistency', () => {
    it('passes a hold lost for good', () => {
      expect(
        rules([...heldFrom('a:1', 1, 0, 100), obs(110, 'a:1', 'lost', false), obs(120, 'a:1', 'lost', false)]),
      ).toEqual([]);
    });
    it('fails a hold said held after it was lost, and a sample that contradicts itself', () => {
      expect(rules([...heldFrom('a:1', 1, 0, 100), obs(110, 'a:1', 'lost', false), obs(120, 'a:1')])).toEqual([
        'consistency',
      ]);
      expect(rules([...heldFrom('a:1', 1, 0, 100), obs(110, 'a:1', 'held', false)])).toEqual(['consistency']);
    });
  });

  describe('progress', () => {
    const quiet = at(1_000, 'harness', { e: 'phase', phase: 'quiet' });
    const options = { settleMs: 100, expectedKeys: ['lock:k'] };
    it('passes when every key is granted again after the faults', () => {
      expect(rules([quiet, grant(1_200, 'a:1', 1)], options)).toEqual([]);
    });
    it('fails a key never granted again', () => {
      expect(rules([quiet, grant(900, 'a:1', 1)], options)).toEqual(['progress']);
    });
  });
});
