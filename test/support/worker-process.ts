import { fork } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ParentMessage, WorkerMessage, WorkerTask } from '../fixtures/worker-protocol.js';
import type { LockTestKit } from './lock-test-kit.js';

const WORKER = fileURLToPath(new URL('../fixtures/lock-worker.ts', import.meta.url));
const REGISTER_TS = fileURLToPath(new URL('./register-ts.mjs', import.meta.url));

type MessageOf<T extends WorkerMessage['type']> = Extract<WorkerMessage, { type: T }>;

/** A child Node process running test/fixtures/lock-worker.ts (TypeScript compiled on the fly by SWC). */
export class WorkerProcess {
  private readonly inbox: WorkerMessage[] = [];
  private readonly waiters = new Set<() => void>();
  private readonly child: ChildProcess;
  /** Resolves when the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(task: WorkerTask) {
    const env = { ...process.env };
    delete env.NODE_OPTIONS; // Jest's --experimental-vm-modules is not for the workers
    this.child = fork(WORKER, [JSON.stringify(task)], {
      execArgv: ['--import', REGISTER_TS],
      env,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child.on('message', (m) => {
      this.inbox.push(m as WorkerMessage);
      for (const wake of [...this.waiters]) wake();
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
    void this.exited.then(() => {
      for (const wake of [...this.waiters]) wake();
    });
  }

  /** Starts a worker; `resources.closeAll()` kills it if the test has not. */
  static start(resources: Pick<LockTestKit, 'add'>, task: WorkerTask): WorkerProcess {
    const worker = new WorkerProcess(task);
    resources.add(() => worker.kill());
    return worker;
  }

  get pid(): number {
    if (this.child.pid === undefined) throw new Error('worker process did not start');
    return this.child.pid;
  }

  send(message: ParentMessage): void {
    this.child.send(message);
  }

  /** The next message of `type` (earlier ones are kept); throws on an `error` message, exit or timeout. */
  next<T extends WorkerMessage['type']>(type: T, timeoutMs = 10_000): Promise<MessageOf<T>> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const failure = this.inbox.find((m) => m.type === 'error');
        if (failure && failure.type === 'error')
          return finish(() => reject(new Error(`worker ${this.child.pid} failed: ${failure.message}`)));
        const index = this.inbox.findIndex((m) => m.type === type);
        if (index >= 0) {
          const [found] = this.inbox.splice(index, 1);
          return finish(() => resolve(found as MessageOf<T>));
        }
        if (this.child.exitCode !== null || this.child.signalCode !== null) {
          return finish(() => reject(new Error(`worker ${this.child.pid} exited before sending "${type}"`)));
        }
      };
      const timer = setTimeout(
        () => finish(() => reject(new Error(`worker ${this.child.pid}: no "${type}" within ${timeoutMs} ms`))),
        timeoutMs,
      );
      const finish = (settle: () => void) => {
        clearTimeout(timer);
        this.waiters.delete(check);
        settle();
      };
      this.waiters.add(check);
      check();
    });
  }

  /** The first message of `type` received and not yet taken, taken now; `undefined` if there is none. */
  take<T extends WorkerMessage['type']>(type: T): MessageOf<T> | undefined {
    const index = this.inbox.findIndex((m) => m.type === type);
    return index < 0 ? undefined : (this.inbox.splice(index, 1)[0] as MessageOf<T>);
  }

  /** Sends `signal` without waiting for anything (SIGSTOP, SIGCONT, or SIGTERM to let it close). */
  signal(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  /** Sends `signal` (default SIGKILL) unless the process has exited, and waits for the exit. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      // A stopped process must be continued to act on anything but SIGKILL.
      if (signal !== 'SIGKILL') this.child.kill('SIGCONT');
      this.child.kill(signal);
    }
    await this.exited;
  }
}
