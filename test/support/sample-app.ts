// Processes of the compiled sample app (dist-sample/), for the e2e suites that run several of them on one Redis.
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const MAIN = join(ROOT, 'dist-sample/sample-app/main.js');

/** Newest modification time (ms) of the files under `dir` that end with `suffix`. */
function newestMtime(dir: string, suffix: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith(suffix)) continue;
    newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

/** Compiles the sample app to dist-sample/ unless the build there is newer than every source it comes from. */
export function buildSampleApp(): void {
  let built = 0;
  try {
    built = statSync(MAIN).mtimeMs;
  } catch {
    // not built yet
  }
  const sources = Math.max(
    newestMtime(join(ROOT, 'lib'), '.ts'),
    newestMtime(join(ROOT, 'sample-app'), '.ts'),
    statSync(join(ROOT, 'tsconfig.json')).mtimeMs,
    statSync(join(ROOT, 'tsconfig.sample.json')).mtimeMs,
  );
  if (built > sources) return;
  const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
  const out = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.sample.json'], { cwd: ROOT, encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`building the sample app failed:\n${out.stdout}${out.stderr}`);
}

/** One sample-app process. */
export interface SampleInstance {
  readonly url: string;
  readonly child: ChildProcess;
  /** The last lines it printed, for failure messages. */
  output(): string;
}

/**
 * Starts the sample app on `port` against `redisUrl`; `env` adds to (or, with `undefined`, removes from) the
 * environment.
 */
export function startSampleInstance(
  port: number,
  redisUrl: string,
  env: Record<string, string | undefined> = {},
): SampleInstance {
  const merged: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    REDIS_URL: redisUrl,
    NODE_OPTIONS: '',
    BOARD_TOKEN: undefined,
    BOARD_ACTIONS: undefined,
    ...env,
  };
  for (const [name, value] of Object.entries(merged)) if (value === undefined) delete merged[name];
  const child = spawn(process.execPath, [MAIN], { cwd: ROOT, env: merged, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const keep = (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-4_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return { url: `http://127.0.0.1:${port}`, child, output: () => log };
}

/** Resolves once `instance` answers HTTP; rejects if it exits or takes longer than `withinMs`. */
export async function waitUntilAnswering(instance: SampleInstance, withinMs = 20_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    if (instance.child.exitCode !== null || instance.child.signalCode !== null) {
      throw new Error(
        `sample app at ${instance.url} exited (${instance.child.exitCode ?? instance.child.signalCode}):\n${instance.output()}`,
      );
    }
    try {
      const res = await fetch(`${instance.url}/locks/ready-check`);
      if (res.ok) {
        await res.json();
        return;
      }
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline)
      throw new Error(`sample app at ${instance.url} did not answer in ${withinMs} ms:\n${instance.output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** SIGTERM (the app has shutdown hooks), then SIGKILL if it is still running after 3 s. */
export function stopSampleInstance(instance: SampleInstance): Promise<void> {
  const { child } = instance;
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
    child.once('exit', () => {
      clearTimeout(timer);
      done();
    });
    child.kill('SIGTERM');
  });
}
