#!/usr/bin/env node
// `nest-redis-locks`: the locks of an application, from a terminal (see docs/cli.md). Exit codes: 0 done, 1 error,
// 2 usage. Errors are one line, never a stack trace.
import { readFileSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseCli, USAGE, UsageError } from './cli-args.js';
import type { CliOptions } from './cli-args.js';
import { runCommand } from './cli-commands.js';
import { openSession } from './cli-connection.js';
import { errorText } from '../common/error-text.js';

const NAME = 'nest-redis-locks';

/** Runs the tool with `argv` (without node and the script); resolves with the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  let options: CliOptions;
  try {
    options = parseCli(argv, process.env);
  } catch (err) {
    return usage(err);
  }
  if (options.command === 'help') return write(process.stdout, USAGE, 0);
  if (options.command === 'version') return write(process.stdout, `${version()}\n`, 0);
  let session;
  try {
    session = await openSession(options);
  } catch (err) {
    return err instanceof UsageError ? usage(err) : fail(err);
  }
  let stopRequested: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => (stopRequested = resolve));
  const onSignal = () => stopRequested();
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const io = {
      out: (text: string) => void process.stdout.write(`${text}\n`),
      err: (text: string) => void process.stderr.write(`${NAME}: ${text}\n`),
      interactive: Boolean(process.stdin.isTTY && process.stdout.isTTY),
      stopped,
    };
    return await runCommand(options, session, io);
  } catch (err) {
    return err instanceof UsageError ? usage(err) : fail(err);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await session.close().catch(() => undefined);
  }
}

function usage(err: unknown): number {
  // One line, as every error of the tool: the message, then where to look.
  process.stderr.write(`${NAME}: ${(err as Error).message.split('\n')[0]} (see --help)\n`);
  return 2;
}

function fail(err: unknown): number {
  const message = errorText(err);
  process.stderr.write(`${NAME}: ${message.split('\n')[0]}\n`);
  return 1;
}

function write(stream: NodeJS.WriteStream, text: string, code: number): number {
  stream.write(text);
  return code;
}

/** The package's version, from the package.json above the running script. */
function version(): string {
  try {
    let dir = dirname(realpathSync(process.argv[1]));
    for (let i = 0; i < 6; i++, dir = dirname(dir)) {
      try {
        const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
        if (pkg.name === NAME && pkg.version) return pkg.version;
      } catch {
        // not here: one level up
      }
    }
  } catch {
    // fall through
  }
  return 'unknown';
}

/** Whether this module is the program being run (not imported by a test). */
function isMain(): boolean {
  try {
    const script = realpathSync(process.argv[1] ?? '');
    return /[\\/]cli[\\/]main\.(js|ts)$/.test(script);
  } catch {
    return false;
  }
}

if (isMain()) {
  // The reader went away (`| head`): stop quietly, as other command-line tools do.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => process.exit(err.code === 'EPIPE' ? 0 : 1));
  }
  main(process.argv.slice(2)).then(
    (code) => {
      // Exit once what was written is flushed (a pipe may still hold it): open handles must not keep the tool alive.
      process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
    },
    (err: unknown) => {
      process.stderr.write(`${NAME}: ${errorText(err)}\n`);
      process.exit(1);
    },
  );
}
