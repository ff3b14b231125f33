import { LockConfigError } from '../../errors/lock-config.error.js';
import type { RedisConnectionInput } from '../../redis/connection.js';
import type { BoundedLockStore } from '../../redis/bounded-lock-store.js';
import type { LockStore, LockStoreFactory } from '../../store/lock-store.js';
import { Permits } from '../permits/permits.js';
import type { LockHandle, LockInfo } from '../../types/lock.types.js';
import { Acquirer } from '../acquire/acquisition.js';
import { logConnectionChange, openEngineStore } from './engine-store.js';
import { HoldDoubt } from '../holds/hold-doubt.js';
import { HoldKeeper } from '../holds/hold-keeper.js';
import { Leftovers } from '../holds/leftovers.js';
import { AlarmScope } from '../activity/alarm-scope.js';
import { DeadlockAlarm, describeHeldTooLong } from '../activity/deadlock-alarm.js';
import { EngineActivity } from '../activity/engine-activity.js';
import { OutageRecheck } from '../holds/outage-recheck.js';
import type { HeldTooLongEvent, LockEventBus, LockLogger } from '../events/lock-events.js';
import type { LockEngineSettings } from '../settings/engine-settings.js';
import { WaitingRoom } from '../acquire/waiting.js';

/** What the parts call back on their engine. */
export interface EngineHooks {
  /** Whether the engine is shutting down (new holds refused). */
  readonly closing: () => boolean;
  readonly closed: () => boolean;
  readonly inspect: (key: string) => Promise<LockInfo | null>;
  /** Tracks an acquisition so `close` waits for it, and bounds it. */
  readonly track: (acquisition: Promise<LockHandle | null>, boundMs: number, key: string) => Promise<LockHandle | null>;
}

/** The parts a `LockEngine` coordinates. */
export interface EngineParts {
  readonly store: BoundedLockStore;
  readonly backend: LockStore;
  readonly keeper: HoldKeeper;
  readonly room: WaitingRoom;
  readonly acquirer: Acquirer;
  readonly leftovers: Leftovers;
  readonly alarm: DeadlockAlarm;
  readonly permits: Permits;
  /** When waiters re-check their locks after an outage of the wake-up connection. */
  readonly recheck: OutageRecheck;
  /** The holds and waits of this process right now (board, gauges, health). */
  readonly activity: EngineActivity;
}

/**
 * Builds an engine's store and the parts around it: hold keeper (watchdog), waiting room, acquirer, alarm, semaphores.
 */
export function assembleEngine(
  redis: RedisConnectionInput | readonly RedisConnectionInput[],
  settings: LockEngineSettings,
  logger: LockLogger,
  events: LockEventBus,
  instanceId: string,
  factory: LockStoreFactory | undefined,
  hooks: EngineHooks,
): EngineParts {
  // Each connection change is logged; the waiters re-check their locks once the wake-up connection is back; holds
  // go in doubt while the command connection is down (in quorum mode: a majority's).
  const masters = Array.isArray(redis) ? redis.length : 1;
  const recheck = new OutageRecheck(() => room.wakeAll(), masters);
  const doubt: HoldDoubt = new HoldDoubt({
    ping: (timeoutMs) => store.ping(timeoutMs),
    lastAnswerAt: () => store.lastAnswer,
    events,
    intervalMs: settings.livenessCheckMs,
    masters,
    keeper: (): HoldKeeper => keeper,
  });
  const opened = openEngineStore(
    redis,
    settings,
    logger,
    (change) => (logConnectionChange(logger, change), recheck.changed(change), doubt.changed(change)),
    factory,
  );
  const store = opened.store;
  const leftovers = new Leftovers(store, logger);
  const keeper = new HoldKeeper(store, events, logger, leftovers, settings.commandTimeoutMs, doubt);
  const room = new WaitingRoom(store, instanceId);
  const acquirer = new Acquirer(
    store,
    keeper,
    room,
    events,
    logger,
    instanceId,
    hooks.closing,
    leftovers,
    settings.commandTimeoutMs,
  );
  // The wait alarm names the holders of a semaphore too (its key answers `inspect` that it is one).
  const inspectAny = (key: string): Promise<LockInfo | null> =>
    hooks.inspect(key).catch(async (err: unknown) => {
      if (!(err instanceof LockConfigError && err.option === 'key')) throw err;
      const p = await permits.inspect(key);
      return (
        p && {
          key,
          mode: 'write',
          holders: p.holders,
          waiting: p.waiting,
          waitingWriters: p.waiting,
          waitingReaders: 0,
          fencingToken: p.fencingToken,
        }
      );
    });
  const scope = new AlarmScope();
  const report = (event: HeldTooLongEvent): void => {
    logger.warn(describeHeldTooLong(event));
    events.emit('held-too-long', event);
  };
  const alarm = new DeadlockAlarm(settings, opened.identity, keeper, room, inspectAny, report, scope);
  const permits = new Permits({
    settings,
    logger,
    instanceId,
    acquirer,
    permits: opened.permits,
    unsupported: opened.noSemaphores,
    track: hooks.track,
    bound: (pending, operation, key) => store.within(pending, operation, key),
    closed: hooks.closed,
    loseAll: (key, sentBefore, which) => keeper.loseAll(key, sentBefore, which),
  });
  const activity = new EngineActivity(keeper, room, scope);
  return { store, backend: opened.backend, keeper, room, acquirer, leftovers, alarm, permits, recheck, activity };
}
