import type { Redis } from 'ioredis';

/**
 * How a `LockSubscriber` reaches Redis's pub/sub: plain SUBSCRIBE on one connection (standalone, Sentinel), or
 * sharded SSUBSCRIBE on the master of each channel's slot (Cluster, see `ShardedChannels`).
 */
export interface WakeUpChannels {
  /** Resolves once Redis confirmed the subscription. */
  subscribe(channel: string): Promise<void>;
  unsubscribe(channel: string): Promise<void>;
  /** Registers the one handler of every message. */
  onMessage(handler: (channel: string, message: string) => void): void;
  /** Whether `channel` is subscribed right now (`false` while a subscription is being moved to another node). */
  isSubscribed(channel: string): boolean;
}

/** Plain pub/sub on one dedicated connection (standalone Redis, Sentinel): the scripts PUBLISH. */
export function plainChannels(connection: Redis): WakeUpChannels {
  return {
    subscribe: async (channel) => {
      await connection.subscribe(channel);
    },
    unsubscribe: async (channel) => {
      await connection.unsubscribe(channel);
    },
    onMessage: (handler) => connection.on('message', handler),
    isSubscribed: () => true,
  };
}
