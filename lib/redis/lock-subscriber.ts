import type { WakeUpChannels } from './driver/wake-up-channels.js';

type Listener = (message: string) => void;

interface Subscription {
  readonly listeners: Set<Listener>;
  /** Resolves once Redis confirmed the SUBSCRIBE. */
  readonly ready: Promise<void>;
  confirmed: boolean;
  lingerTimer: NodeJS.Timeout | undefined;
}

/**
 * One subscriber per engine (a connection, or one per Cluster master), shared by every waiter. Subscriptions are
 * reference-counted per lock
 * channel and kept for a short linger after the last waiter leaves, so a busy lock is not re-subscribed for
 * every acquisition.
 */
export class LockSubscriber {
  private readonly subs = new Map<string, Subscription>();

  constructor(
    private readonly connection: WakeUpChannels,
    private readonly lingerMs: number,
    private readonly onError: (err: unknown) => void,
  ) {
    connection.onMessage((channel: string, message: string) => {
      const sub = this.subs.get(channel);
      if (!sub) return;
      for (const listener of [...sub.listeners]) listener(message);
    });
  }

  /**
   * Adds `listener` to `channel`. When the subscription is already confirmed, the listener is live when this
   * returns (`live: true`); otherwise `ready` resolves once Redis confirmed the SUBSCRIBE.
   */
  listen(
    channel: string,
    listener: Listener,
  ): { readonly live: boolean; readonly ready: Promise<void>; readonly stop: () => void } {
    let sub = this.subs.get(channel);
    if (!sub) {
      const created: Subscription = {
        listeners: new Set(),
        confirmed: false,
        lingerTimer: undefined,
        ready: this.connection.subscribe(channel).then(() => {
          created.confirmed = true;
        }),
      };
      created.ready.catch(() => {
        if (this.subs.get(channel) === created) this.subs.delete(channel);
      });
      sub = created;
      this.subs.set(channel, sub);
    }
    const current = sub;
    if (current.lingerTimer) {
      clearTimeout(current.lingerTimer);
      current.lingerTimer = undefined;
    }
    current.listeners.add(listener);
    let stopped = false;
    return {
      live: current.confirmed,
      ready: current.ready,
      stop: () => {
        if (stopped) return;
        stopped = true;
        current.listeners.delete(listener);
        if (current.listeners.size === 0) this.scheduleUnsubscribe(channel, current);
      },
    };
  }

  private scheduleUnsubscribe(channel: string, sub: Subscription): void {
    const drop = () => {
      sub.lingerTimer = undefined;
      if (sub.listeners.size > 0 || this.subs.get(channel) !== sub) return;
      this.subs.delete(channel);
      this.connection.unsubscribe(channel).catch(this.onError);
    };
    if (this.lingerMs <= 0) return drop();
    sub.lingerTimer = setTimeout(drop, this.lingerMs);
    sub.lingerTimer.unref();
  }

  /** Whether `channel` has a confirmed subscription: a listener added now misses no later message. */
  isLive(channel: string): boolean {
    return this.subs.get(channel)?.confirmed === true && this.connection.isSubscribed(channel);
  }

  /** Drops every subscription timer; the connection itself is closed by its owner. */
  close(): void {
    for (const sub of this.subs.values()) if (sub.lingerTimer) clearTimeout(sub.lingerTimer);
    this.subs.clear();
  }
}
