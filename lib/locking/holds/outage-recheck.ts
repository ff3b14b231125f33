import type { ConnectionStateChange } from '../../store/lock-store.js';

/**
 * When the waiters re-check their locks after an outage. A wake-up published while the wake-up connection was down
 * is lost, so every waiter retries once that connection is back. A retry is a command, though, and the command
 * connection reconnects on its own schedule (after a Sentinel failover, often after the subscriber): a retry sent
 * before it is back waits for it and fails the waiter with `LockUnavailableError`, although its wait had time left.
 * So the re-check waits until enough command connections are up for an attempt to be answered: the one connection,
 * or in quorum mode a majority of the masters' (a master down for good does not hold it up). Connections the
 * application passed in are not watched (their state is not reported): the re-check is immediate then, as before.
 */
export class OutageRecheck {
  /** Command connections reported down and not back yet (one per master in quorum mode). */
  private commandsDown = 0;
  private pending = false;
  private stopped = false;

  constructor(
    /** Makes every waiter retry now. */
    private readonly wakeAll: () => void,
    /** The store's command connections: 1, or the number of masters in quorum mode. */
    private readonly masters: number,
  ) {}

  changed(change: ConnectionStateChange): void {
    if (this.stopped) return;
    if (change.connection === 'command') {
      this.commandsDown = Math.max(0, this.commandsDown + (change.state === 'lost' ? 1 : -1));
    } else if (change.state === 'restored') {
      this.pending = true;
    }
    if (this.pending && this.answerable()) {
      this.pending = false;
      this.wakeAll();
    }
  }

  /** Drops a re-check still to come, and every later one (shutdown: every waiter is woken to give up anyway). */
  stop(): void {
    this.stopped = true;
    this.pending = false;
  }

  private answerable(): boolean {
    return this.masters - this.commandsDown >= Math.floor(this.masters / 2) + 1;
  }
}
