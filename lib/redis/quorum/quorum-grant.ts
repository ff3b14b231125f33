import { performance } from 'node:perf_hooks';
import { DRIFT_FACTOR, DRIFT_MS, driftOf } from '../../store/drift.js';
import type { AcquireCall, AcquireReply, BlockedBy } from '../../store/lock-store.js';
import { laneOf } from './quorum-masters.js';
import type { QuorumMasters } from './quorum-masters.js';
import { sleep, within } from './quorum-outcomes.js';
import type { Outcome } from './quorum-outcomes.js';
import type { QuorumUndo } from './quorum-undo.js';

/** The least time the masters still unanswered get once a majority granted, in milliseconds. */
const GRACE_MS = 5;
/** The longest random pause after a split vote, in milliseconds. */
const SPLIT_PAUSE_MS = 50;
/** What a split-vote pause leaves of the command bound, in milliseconds. */
const SPLIT_PAUSE_MARGIN_MS = 20;

/**
 * An acquisition in quorum mode: sent to every master at once; granted when a majority granted within the validity
 * `leaseMs − elapsed − (leaseMs × 0.01 + 2 ms)` (elapsed from sending to the majority's answers), fencing token the
 * largest among the grants. Otherwise every grant is undone (`QuorumUndo.undoOn`), on the masters that granted and,
 * once their outcome is known, on those that did not answer. `commandTimeoutMs` bounds the whole call.
 */
export async function acquireOnQuorum(
  masters: QuorumMasters,
  undo: QuorumUndo,
  engineCall: AcquireCall,
  commandTimeoutMs: number,
): Promise<AcquireReply> {
  // The masters keep the lease plus the drift allowance: the engine counts the hold valid for `leaseMs` from
  // before it sent the attempt, so a master whose clock runs up to that much fast still has the hold then.
  const call: AcquireCall = { ...engineCall, leaseMs: withDrift(engineCall.leaseMs) };
  masters.useLease(call.leaseMs);
  const n = masters.size;
  const q = masters.quorum;
  const lane = laneOf(call.lock, call.token);
  const attempt = `${lane}\u0000${call.seq}`;
  if (undo.wasUndone(attempt)) return { granted: false, retryInMs: 0, blockedBy: 'writer' };
  if (call.waiterId !== '') masters.waiterLanes.set(call.waiterId, lane);
  const sentAt = performance.now();
  const raws = masters.list.map((m) => masters.inLane(m, lane, () => m.store.acquire(call)));
  for (const r of raws) r.catch(() => undefined);
  const grantedBy = (o: Outcome<AcquireReply> | undefined, i: number) =>
    o?.ok === true && o.value.granted && masters.eligible(masters.list[i]);
  // Once a majority granted, the other masters get as long again as the majority took (at least GRACE_MS) to
  // answer as well: when they do, the fencing token is the largest of every grant, as `inspect` reports it.
  let graceUntil: number | undefined;
  let majorityAt: number | undefined;
  const outcomes = await masters.gather(raws, masters.bound(), (outs, timedOut) => {
    const settled = outs.filter(Boolean).length;
    const answered = outs.filter((o) => o?.ok).length;
    const grants = outs.filter(grantedBy).length;
    if (settled === n || (answered >= q && grants + (n - settled) < q)) return true;
    if (grants < q) return false;
    majorityAt ??= performance.now();
    graceUntil ??= majorityAt + Math.max(GRACE_MS, majorityAt - sentAt);
    return timedOut(graceUntil);
  });
  // Elapsed from sending to the majority's answers (the grace above does not count against the grant).
  const elapsed = (majorityAt ?? performance.now()) - sentAt;
  const validity = engineCall.leaseMs - elapsed - driftOf(engineCall.leaseMs);
  const grants = outcomes.filter(grantedBy);
  const granted = grants.length >= q && (call.reentry || validity > 0);
  if (granted) {
    masters.waiterLanes.delete(call.waiterId);
    const replies = grants.map((o) => (o as { value: AcquireReply & { granted: true } }).value);
    // Waiter registrations left on masters that did not grant are withdrawn there once they answer.
    if (call.waiterId !== '') {
      outcomes.forEach((o, i) => {
        if (o?.ok && o.value.granted) return;
        const m = masters.list[i];
        undo.background(m, lane, async () => {
          const reply = await raws[i].catch(() => undefined);
          if (reply && !reply.granted)
            await within(m.store.cancelWait(call.lock, call.mode, call.waiterId), masters.bound());
        });
      });
    }
    return {
      granted: true,
      fencingToken: Math.max(...replies.map((r) => r.fencingToken)),
      reentered: replies.filter((r) => r.reentered).length >= q,
    };
  }
  // Not granted: undo this attempt on every master that granted it, or may yet (and remember it as undone, so
  // that a re-send of it is not applied anew). A plain refusal everywhere leaves nothing to undo or remember.
  // A master still awaited that turns out to have granted is remembered then (`undoOn`).
  const remember = () => undo.remember(attempt, call.leaseMs);
  if (outcomes.some((o) => o !== undefined && (!o.ok || o.value.granted))) remember();
  outcomes.forEach((o, i) => {
    if (o?.ok && !o.value.granted) return;
    undo.undoOn(masters.list[i], lane, call, raws[i], remember);
  });
  const answered = outcomes.filter((o) => o?.ok).length;
  if (answered < q) throw masters.failureOf(outcomes, answered);
  const reply = notGranted(masters, outcomes, grants.length, elapsed);
  // A re-entry that a majority no longer holds: the engine declares the hold lost; what a minority still has of
  // it is freed (after the undo above, on each master's lane).
  if (call.reentry && reply.blockedBy === 'not-held')
    undo.freeRemnants(
      call.lock,
      call.token,
      outcomes.map((o) => !o?.ok || o.value.granted),
    );
  // A split vote (some masters granted, not a majority): two waiting contenders that split the masters would
  // otherwise retry in lockstep and split them again. A short random pause (of the order of the attempt, at most
  // SPLIT_PAUSE_MS) breaks the tie. A `tryAcquire` (no waiter) does not retry: no pause.
  // The pause stays within the call's command bound (the engine counts the whole call against it).
  if (grants.length > 0 && call.waiterId !== '') {
    const room = commandTimeoutMs - (performance.now() - sentAt) - SPLIT_PAUSE_MARGIN_MS;
    const pause = Math.random() * Math.min(elapsed * 2 + 5, SPLIT_PAUSE_MS, Math.max(0, room));
    if (pause > 0) await sleep(pause);
  }
  return reply;
}

/** The reply of an attempt that a majority answered without granting. */
function notGranted(
  masters: QuorumMasters,
  outcomes: readonly (Outcome<AcquireReply> | undefined)[],
  grants: number,
  elapsedMs: number,
): Extract<AcquireReply, { granted: false }> {
  // How long until each master that answered can grant: 0 for one that did (once undone), its blocking leases for
  // one that did not, at least its quarantine for one that does not count yet. A majority can grant once the
  // q-th shortest of these has passed.
  const waits: number[] = [];
  const blockers = new Map<BlockedBy, number>();
  outcomes.forEach((o, i) => {
    if (!o?.ok) return;
    const quarantine = masters.quarantineLeftMs(masters.list[i]);
    if (o.value.granted) {
      waits.push(quarantine);
      return;
    }
    waits.push(Math.max(o.value.retryInMs, quarantine));
    blockers.set(o.value.blockedBy, (blockers.get(o.value.blockedBy) ?? 0) + 1);
  });
  waits.sort((a, b) => a - b);
  // A majority granted too slowly (past the validity): try again once as long as that attempt took has passed.
  const retryInMs =
    grants >= masters.quorum ? Math.ceil(elapsedMs) : (waits[masters.quorum - 1] ?? waits[waits.length - 1] ?? 0);
  let blockedBy: BlockedBy = 'writer';
  let most = 0;
  for (const [by, count] of blockers) {
    if (count > most) {
      blockedBy = by;
      most = count;
    }
  }
  return { granted: false, retryInMs, blockedBy };
}

/** The lease a master keeps for a lease of `leaseMs` the engine counts on (whole milliseconds). */
export function withDrift(leaseMs: number): number {
  return Math.ceil(leaseMs + driftOf(leaseMs));
}

/** The inverse of `withDrift`, for a lease a master reports remaining (never negative). */
export function withoutDrift(remainingMs: number): number {
  return Math.max(0, Math.floor((remainingMs - DRIFT_MS) / (1 + DRIFT_FACTOR)));
}
