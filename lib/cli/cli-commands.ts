import { createInterface } from 'node:readline/promises';
import { LOCK_KIND } from '../read-model/kinds.js';
import { validateLockKey } from '../store/lock-key.js';
import type { CliOptions } from './cli-args.js';
import { UsageError } from './cli-args.js';
import { CliError } from './cli-connection.js';
import type { CliSession } from './cli-connection.js';
import { duration, formatEntry, formatLeaders, formatSnapshot, printable } from './cli-format.js';
import { LEADER_KEY_PREFIX } from '../leader/leader-options.js';

/** Where the commands write, and how they read an answer (replaced in tests of the formatting). */
export interface CliIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly interactive: boolean;
  /** Resolves when the user asks to stop (Ctrl-C). */
  readonly stopped: Promise<void>;
}

/** Runs one command; resolves with the exit code. */
export async function runCommand(options: CliOptions, session: CliSession, io: CliIo): Promise<number> {
  switch (options.command) {
    case 'list':
      return list(options, session, io);
    case 'inspect':
      return inspect(options, session, io);
    case 'watch':
      return watch(options, session, io);
    case 'release':
      return release(options, session, io);
    case 'leaders':
      return leaders(options, session, io);
    default:
      throw new UsageError(`unknown command "${options.command}"`);
  }
}

async function list(options: CliOptions, session: CliSession, io: CliIo): Promise<number> {
  const snapshot = await session.snapshots.get(options.target);
  if (options.json) io.out(JSON.stringify(snapshot, null, 2));
  else if (!snapshot.error) io.out(formatSnapshot(snapshot));
  if (snapshot.error) throw new CliError(`cannot list the locks at ${session.where}: ${snapshot.error}`);
  return 0;
}

/** The leaders whose name starts with the prefix given: a scan of `leader:<prefix>…` (the keys, not every lock). */
async function leaders(options: CliOptions, session: CliSession, io: CliIo): Promise<number> {
  const snapshot = await session.snapshots.get(`${LEADER_KEY_PREFIX}${options.target}`);
  if (snapshot.error) throw new CliError(`cannot list the leaders at ${session.where}: ${snapshot.error}`);
  io.out(options.json ? JSON.stringify(snapshot.leaders, null, 2) : formatLeaders(snapshot, options.target));
  return 0;
}

function checkedKey(key: string): string {
  try {
    return validateLockKey(key);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

async function inspect(options: CliOptions, session: CliSession, io: CliIo): Promise<number> {
  const key = checkedKey(options.target);
  const entry = await session.snapshots.detail('lock', key);
  io.out(options.json ? JSON.stringify(entry, null, 2) : formatEntry(entry, key, options));
  return 0;
}

async function watch(options: CliOptions, session: CliSession, io: CliIo): Promise<number> {
  let stop = false;
  void io.stopped.then(() => (stop = true));
  while (!stop) {
    const started = Date.now();
    const snapshot = await session.snapshots.get(options.target);
    if (options.json) io.out(JSON.stringify(snapshot));
    else {
      const head = `nest-redis-locks watch ${session.where}  ${new Date().toLocaleTimeString()}  (every ${duration(options.intervalMs)}, Ctrl-C to stop)`;
      const body = snapshot.error ? `Redis cannot be read: ${printable(snapshot.error)}` : formatSnapshot(snapshot);
      // On a terminal, redraw in place; in a pipe, one block per refresh.
      io.out(io.interactive ? `\x1b[H\x1b[2J${head}\n\n${body}` : `${head}\n${body}\n`);
    }
    const wait = Math.max(0, options.intervalMs - (Date.now() - started));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([io.stopped, new Promise((r) => (timer = setTimeout(r, wait)))]);
    clearTimeout(timer);
  }
  return 0;
}

async function release(options: CliOptions, session: CliSession, io: CliIo): Promise<number> {
  const key = checkedKey(options.target);
  if (!options.yes) {
    if (!io.interactive) throw new UsageError('release asks for confirmation, but this is not a terminal: add --yes');
    const entry = await session.snapshots.detail('lock', key);
    if (!entry) {
      io.out(
        options.json ? JSON.stringify({ key, released: false }) : `${printable(key)}: not held, nothing to release`,
      );
      return 0;
    }
    const holders = entry.holders
      .map((h) => `${h.mode} by ${printable(h.owner)} on ${printable(h.host)} pid ${h.pid} for ${duration(h.heldMs)}`)
      .join('; ');
    const answer = await ask(
      `Force release ${entry.kind} "${printable(key)}" (${holders})? Its holders lose it at their next renewal. Type yes to confirm: `,
    );
    if (answer.trim().toLowerCase() !== 'yes') {
      io.err('cancelled: nothing released');
      return 1;
    }
  }
  // A lock, or every permit of a semaphore.
  const released = await LOCK_KIND.forceRelease(key, session.engine);
  io.out(
    options.json
      ? JSON.stringify({ key, released })
      : released
        ? `released "${printable(key)}"`
        : `${printable(key)}: was not held, nothing released`,
  );
  return 0;
}

/** The answer typed on the terminal; `''` when input ends first (Ctrl-D), so the question never hangs. */
async function ask(question: string): Promise<string> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  const closed = new Promise<string>((resolve) => rl.once('close', () => resolve('')));
  try {
    return await Promise.race([rl.question(question), closed]);
  } finally {
    rl.close();
  }
}
