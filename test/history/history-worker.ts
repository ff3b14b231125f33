// A history worker: a separate Node process (forked by worker-pool.ts through the TypeScript loader) that uses the
// library's public API against the Redis under test and logs everything it is granted and told to its own history
// file. Commands from the harness come over the IPC channel (worker-task.ts).
import { Redis } from 'ioredis';
import type { RedisOptions } from 'ioredis';
import { LockEngine } from '../../lib/index.js';
import { HistoryLog } from './history-events.js';
import { Observer, reasonName } from './worker-observer.js';
import { WorkerOperations } from './worker-operations.js';
import { SeededRandom } from './seeded-random.js';
import type { FromWorker, ToWorker, WorkerTask } from './worker-task.js';

const task = JSON.parse(process.argv[2]) as WorkerTask;
const send = (m: FromWorker) => {
  if (process.connected) process.send?.(m);
};
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function connection(target: WorkerTask['redis']): string | RedisOptions {
  return typeof target === 'string' ? target : { sentinels: [...target.sentinels], name: target.name };
}

async function main(): Promise<void> {
  const log = new HistoryLog(task.historyFile, task.name);
  const random = new SeededRandom(task.seed);
  const engine = new LockEngine({
    redis: connection(task.redis),
    keyPrefix: task.prefix,
    waitTimeoutMs: 2_000,
    commandTimeoutMs: task.engine?.commandTimeoutMs ?? 1_000,
    ...(task.engine?.waitForReplicas ? { waitForReplicas: task.engine.waitForReplicas } : {}),
    // Losses and failed renewals are expected under the nemesis; the history records them.
    logger: { warn: () => undefined, error: () => undefined },
  });
  // The fenced store's client: no resend after a reconnect (a write is applied once or reported as an error).
  const storeTarget = connection(task.store);
  const storeOptions: RedisOptions = {
    autoResendUnfulfilledCommands: false,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    commandTimeout: 1_000,
    retryStrategy: () => 50,
  };
  const store =
    typeof storeTarget === 'string'
      ? new Redis(storeTarget, storeOptions)
      : new Redis({ ...storeTarget, ...storeOptions });
  store.on('error', () => undefined);

  let stopping = false;
  let closing = false;
  const observer = new Observer(log, random, task.sampleMs);
  const ops = new WorkerOperations({
    task,
    engine,
    store,
    log,
    observer,
    stopping: () => stopping,
    closing: () => closing,
  });
  process.on('unhandledRejection', (err) => {
    log.log({ e: 'state', hold: '-', state: 'unhandled-rejection', reason: reasonName(err) });
  });

  await engine.ping(2_000);
  const loops = Array.from({ length: task.loops }, () => ops.loop(new SeededRandom(random.fork())));
  const campaigns = task.leaderNames.map((name) => ops.campaign(name, new SeededRandom(random.fork())));
  send({ type: 'ready' });

  process.on('message', (raw) => {
    const m = raw as ToWorker;
    if (m.type === 'stop' && !stopping && !closing) {
      stopping = true;
      void (async () => {
        // Bounded: a loop stuck behind a frozen Redis must not keep the worker alive (the harness kills it then).
        await Promise.race([Promise.all(loops), sleep(6_000)]);
        await Promise.race([Promise.all(campaigns.map((stop) => stop())), sleep(3_000)]);
        await Promise.race([engine.close(), sleep(3_000)]);
        store.disconnect();
        observer.stop();
        send({ type: 'stopped' });
        process.exit(0);
      })();
    }
    if (m.type === 'close-engine' && !stopping && !closing) {
      void (async () => {
        // Close mid-hold: wait (briefly) for something to be held, then close under the holders.
        const until = Date.now() + 3_000;
        while (observer.size === 0 && Date.now() < until) await sleep(5);
        closing = true;
        log.log({ e: 'close', phase: 'begin' });
        const holdsAtClose = observer.size;
        try {
          await engine.close();
        } catch (err) {
          log.log({ e: 'state', hold: '-', state: 'close-error', reason: reasonName(err) });
        }
        log.log({ e: 'close', phase: 'done' });
        send({ type: 'closed', holdsAtClose });
        await sleep(m.observeMs);
        observer.stop();
        store.disconnect();
        process.exit(0);
      })();
    }
  });
}

main().catch((err: unknown) => {
  send({ type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  process.exit(1);
});
