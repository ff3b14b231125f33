// The `nest-redis-locks` command as users get it: packed into a tarball, installed into a fresh project, run as
// node_modules/.bin/nest-redis-locks.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** What one run of the binary did. */
export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

/** The installed binary, in a temporary project. */
export interface InstalledCli {
  /** The temporary project (the binary's working directory). */
  readonly project: string;
  /** node_modules/.bin/nest-redis-locks of that project. */
  readonly bin: string;
  /**
   * Runs the binary with `args`; `env` is added to the environment (REDIS_URL is cleared unless given); `input` is its
   * stdin.
   */
  run(args: readonly string[], env?: NodeJS.ProcessEnv, input?: string): Promise<CliRun>;
  /** Removes the project. */
  remove(): void;
}

/** Packs the package (dist/ must be built) and installs the tarball offline into a fresh temporary project. */
export function installPackedCli(): InstalledCli {
  if (!existsSync(join(ROOT, 'dist/esm/cli/main.js')))
    throw new Error('dist/ is missing: run `npm run build` first (npm test does)');
  const project = mkdtempSync(join(tmpdir(), 'nest-redis-locks-cli-'));
  const packed = spawnSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', project], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (packed.status !== 0) throw new Error(`npm pack failed: ${packed.stderr}`);
  const tarball = join(project, (JSON.parse(packed.stdout) as { filename: string }[])[0].filename);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'cli-user', version: '1.0.0', private: true }));
  // Offline: the package has no dependencies of its own; its peer ioredis comes from this repository.
  const installed = spawnSync(
    'npm',
    [
      'install',
      tarball,
      '--offline',
      '--ignore-scripts',
      '--legacy-peer-deps',
      '--no-audit',
      '--no-fund',
      '--no-package-lock',
    ],
    {
      cwd: project,
      encoding: 'utf8',
    },
  );
  if (installed.status !== 0) throw new Error(`npm install of the tarball failed: ${installed.stderr}`);
  mkdirSync(join(project, 'node_modules'), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules', 'ioredis'), join(project, 'node_modules', 'ioredis'), 'dir');
  const bin = join(project, 'node_modules', '.bin', 'nest-redis-locks');
  return {
    project,
    bin,
    run: (args, env = {}, input = '') =>
      new Promise((resolve) => {
        const started = performance.now();
        const child = spawn(bin, args, {
          cwd: project,
          env: { ...process.env, NODE_OPTIONS: '', REDIS_URL: '', ...env },
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
        child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
        child.stdin.end(input);
        child.on('exit', (code) => resolve({ code, stdout, stderr, ms: performance.now() - started }));
      }),
    remove: () => rmSync(project, { recursive: true, force: true }),
  };
}
