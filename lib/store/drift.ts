/**
 * The clock drift allowance, in one place. A hold's lease runs on two clocks: Redis expires the key on the server's
 * clock, and the holder counts its local deadline on its own (`performance.now()`, from when the grant or renewal
 * was sent). The assumption everything rests on: the two clocks' rates differ by at most 1 % (NTP keeps real clocks
 * within a few parts per million; 1 % covers a virtual machine's or libfaketime's much worse ones) and a timer may
 * fire up to 2 ms late. So a holder counts its lease as `leaseMs − (leaseMs × 0.01 + 2 ms)`, on every topology; in
 * quorum mode the masters also keep the lease plus this allowance (Redlock's figures). A server clock that *steps*
 * (an operator, a VM restored) is outside the assumption: leases can end early then, and fencing tokens are what
 * protects the data.
 */

/** Part of a lease allowed for clock drift between Redis and the holder. */
export const DRIFT_FACTOR = 0.01;
/** Fixed part of the drift allowance, in milliseconds (timer resolution). */
export const DRIFT_MS = 2;

/** The drift allowance of a lease of `leaseMs`: `leaseMs × 0.01 + 2 ms`. */
export function driftOf(leaseMs: number): number {
  return leaseMs * DRIFT_FACTOR + DRIFT_MS;
}

/** The local deadline of a lease of `leaseMs` whose grant or renewal was sent at `sentAt` (performance.now()). */
export function leaseDeadline(sentAt: number, leaseMs: number): number {
  return sentAt + leaseMs - driftOf(leaseMs);
}
