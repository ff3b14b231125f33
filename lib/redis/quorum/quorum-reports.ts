import { LockError } from '../../errors/lock.error.js';
import { LockUnavailableError } from '../../errors/lock-unavailable.error.js';
import type { LockOperation, LockUnavailableReason } from '../../errors/lock-unavailable.error.js';
import type { LockHolderInfo, LockInfo } from '../../types/lock.types.js';
import type { StorePing } from '../../store/lock-store.js';
import { withoutDrift } from './quorum-grant.js';
import type { QuorumMasters } from './quorum-masters.js';
import { QuorumFailure } from './quorum-outcomes.js';
import { TIMED_OUT } from '../../store/timed-out.js';

/**
 * The majority's view of a lock from the masters' `views`: the holders that a majority of all the masters have
 * (matched by mode, owner and identity), each with the hold count and the lease remaining that a majority has (the
 * `quorum`-th largest), the largest fencing token any master has, and the most waiters any master counts. `null`
 * when no holder is on a majority.
 */
export function majorityView(key: string, views: readonly (LockInfo | null)[], quorum: number): LockInfo | null {
  const byHolder = new Map<string, LockHolderInfo[]>();
  for (const view of views) {
    for (const h of view?.holders ?? []) {
      const id = [h.mode, h.owner, h.host, h.pid, h.app].join('|');
      byHolder.set(id, [...(byHolder.get(id) ?? []), h]);
    }
  }
  const holders: LockHolderInfo[] = [];
  for (const seen of byHolder.values()) {
    if (seen.length < quorum) continue;
    const leases = seen.map((h) => h.remainingLeaseMs).sort((a, b) => b - a);
    holders.push({
      ...seen[0],
      holdCount: seen.map((h) => h.holdCount).sort((a, b) => b - a)[quorum - 1],
      since: new Date(Math.min(...seen.map((h) => h.since.getTime()))),
      // The masters keep the drift allowance on top of the lease (`withDrift`): reported without it.
      remainingLeaseMs: withoutDrift(leases[quorum - 1]),
      fencingToken: Math.max(...seen.map((h) => h.fencingToken)),
    });
  }
  if (holders.length === 0) return null;
  const present = views.filter((v): v is LockInfo => v !== null);
  const waitingWriters = Math.max(...present.map((v) => v.waitingWriters));
  const waitingReaders = Math.max(...present.map((v) => v.waitingReaders));
  return {
    key,
    mode: holders.some((h) => h.mode === 'write') ? 'write' : 'read',
    holders,
    waiting: waitingWriters + waitingReaders,
    waitingWriters,
    waitingReaders,
    fencingToken: Math.max(...present.map((v) => v.fencingToken)),
  };
}

/** The `LockError` for a failed quorum call: each master's failure described by its own store, in one message. */
export function describeQuorumFailure(
  masters: QuorumMasters,
  failure: unknown,
  operation: LockOperation,
  key: string | undefined,
  timeoutMs: number,
): LockError {
  if (failure instanceof LockError) return failure;
  const n = masters.size;
  if (failure instanceof QuorumFailure) {
    const described = failure.failures.map((f) => ({
      master: f.master,
      error: masters.list[f.index].store.describeFailure(f.error, operation, key, timeoutMs),
    }));
    const first =
      described.find((d) => d.error instanceof LockUnavailableError && d.error.reason === 'permission-denied') ??
      described[0];
    const reason: LockUnavailableReason =
      first?.error instanceof LockUnavailableError ? first.error.reason : 'unreachable';
    const each = described.map((d) => `master ${d.master}: ${innerDetail(d.error)}`).join('; ');
    return new LockUnavailableError({
      key,
      operation,
      reason,
      detail: `quorum not reached: ${failure.answered} of ${n} masters answered, ${failure.needed} needed (${each})`,
      missing: first?.error instanceof LockUnavailableError ? first.error.missing : undefined,
      cause: failure,
    });
  }
  if (failure === TIMED_OUT) {
    const down = masters.list.filter((m) => !m.store.commandConnection.connected).map((m) => m.label);
    const reason: LockUnavailableReason = n - down.length < masters.quorum ? 'unreachable' : 'timeout';
    const which = down.length > 0 ? `; not connected: ${down.join(', ')}` : '';
    return new LockUnavailableError({
      key,
      operation,
      reason,
      detail: `no answer from a majority of the ${n} masters within commandTimeoutMs (${timeoutMs} ms)${which}`,
    });
  }
  return masters.list[0].store.describeFailure(failure, operation, key, timeoutMs);
}

/**
 * Every master's ping in one: a connection kind is up when it answered on a majority; `error` names the masters that
 * failed.
 */
export function majorityPing(masters: QuorumMasters, pings: readonly StorePing[]): StorePing {
  const failed = pings.flatMap((p, i) => (p.error ? [`master ${masters.list[i].label}: ${p.error}`] : []));
  const commands = pings.filter((p) => p.command);
  const subscribers = pings.filter((p) => p.subscriber);
  return {
    command: commands.length >= masters.quorum,
    subscriber: subscribers.length >= masters.quorum,
    commandMs: Math.max(0, ...commands.map((p) => p.commandMs)),
    subscriberMs: Math.max(0, ...subscribers.map((p) => p.subscriberMs)),
    ...(failed.length > 0 ? { error: failed.join('; ') } : {}),
  };
}

function innerDetail(err: LockError): string {
  const m = /Redis unavailable \([^)]*\): (.*)$/s.exec(err.message);
  return m ? m[1] : err.message;
}
