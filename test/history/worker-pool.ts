// The harness's side of the history workers: forks them (as test/support/worker-process.ts does), restarts a slot
// with a new incarnation after a kill or a close, and sends them signals and commands.
import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { killNow, onExit } from '../support/faults.js';
import type { FromWorker, ToWorker, WorkerTask } from './worker-task.js';

const WORKER = fileURLToPath(new URL('./history-worker.ts', import.meta.url));
const REGISTER_TS = fileURLToPath(new URL('../support/register-ts.mjs', import.meta.url));

/** One running worker process (one incarnation of a slot). */
export class WorkerIncarnation {
  private readonly inbox: FromWorker[] = [];
  private readonly wake = new Set<() => void>();
  readonly exited: Promise<void>;
  stopped = false;
  private readonly forgetExit: () => void;

  constructor(
    readonly task: WorkerTask,
    private readonly child: ChildProcess,
  ) {
    child.on('message', (m) => {
      this.inbox.push(m as FromWorker);
      for (const w of [...this.wake]) w();
    });
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    void this.exited.then(() => {
      for (const w of [...this.wake]) w();
    });
    this.forgetExit = onExit(() => killNow(child.pid));
    void this.exited.then(() => this.forgetExit());
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  send(m: ToWorker): void {
    if (this.alive && this.child.connected) this.child.send(m);
  }

  signal(signal: NodeJS.Signals): void {
    if (this.alive) this.child.kill(signal);
  }

  /** The next message of `type`; rejects on an `error` message, on exit, or after `timeoutMs`. */
  next<T extends FromWorker['type']>(type: T, timeoutMs: number): Promise<Extract<FromWorker, { type: T }>> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const failed = this.inbox.find((m) => m.type === 'error');
        if (failed && failed.type === 'error')
          return done(() => reject(new Error(`${this.task.name}: ${failed.message}`)));
        const i = this.inbox.findIndex((m) => m.type === type);
        if (i >= 0) return done(() => resolve(this.inbox.splice(i, 1)[0] as Extract<FromWorker, { type: T }>));
        if (!this.alive) return done(() => reject(new Error(`${this.task.name} exited before "${type}"`)));
      };
      const timer = setTimeout(
        () => done(() => reject(new Error(`${this.task.name}: no "${type}" in ${timeoutMs} ms`))),
        timeoutMs,
      );
      const done = (settle: () => void) => {
        clearTimeout(timer);
        this.wake.delete(check);
        settle();
      };
      this.wake.add(check);
      check();
    });
  }

  /** SIGKILL (continues nothing first: a stopped process dies too); resolves once it is gone. */
  async kill(): Promise<void> {
    if (this.alive) this.child.kill('SIGKILL');
    await this.exited;
  }
}

/** The worker slots of a run: `size` workers, each restarted with a new incarnation when the nemesis asks. */
export class WorkerPool {
  private readonly slots: WorkerIncarnation[] = [];
  private readonly incarnations: number[] = [];
  /** Every incarnation ever started (for the report). */
  started = 0;

  constructor(
    private readonly dir: string,
    private readonly taskFor: (slot: number, name: string, historyFile: string) => WorkerTask,
  ) {}

  get size(): number {
    return this.slots.length;
  }

  /** Starts `count` workers and waits until each is ready. */
  async start(count: number, readyTimeoutMs: number): Promise<void> {
    for (let i = 0; i < count; i++) this.incarnations.push(0);
    await Promise.all(Array.from({ length: count }, (_, slot) => this.launch(slot, readyTimeoutMs)));
  }

  worker(slot: number): WorkerIncarnation {
    return this.slots[slot];
  }

  /** Starts slot `slot` again (a new incarnation with its own history file) and waits until it is ready. */
  async launch(slot: number, readyTimeoutMs: number): Promise<WorkerIncarnation> {
    const n = this.incarnations[slot]++;
    const name = `w${slot}.${n}`;
    const task = this.taskFor(slot, name, join(this.dir, `${name}.jsonl`));
    const env = { ...process.env };
    delete env.NODE_OPTIONS; // Jest's --experimental-vm-modules is not for the workers
    const child = fork(WORKER, [JSON.stringify(task)], {
      execArgv: ['--import', REGISTER_TS],
      env,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const worker = new WorkerIncarnation(task, child);
    this.slots[slot] = worker;
    this.started++;
    await worker.next('ready', readyTimeoutMs);
    return worker;
  }

  /** Asks every live worker to stop (release, close, exit); kills those that have not exited within `timeoutMs`. */
  async stopAll(timeoutMs: number): Promise<void> {
    for (const w of this.slots) {
      w.signal('SIGCONT');
      w.send({ type: 'stop' });
    }
    await Promise.all(
      this.slots.map(async (w) => {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([w.exited, new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
        clearTimeout(timer);
        await w.kill();
      }),
    );
  }

  /** Kills every worker at once (cleanup after a failure). */
  async killAll(): Promise<void> {
    await Promise.all(this.slots.map((w) => w.kill()));
  }
}
