// `npm run test:consumers`: installs the packed package into real applications, the way users install it,
// and checks that it loads, type-checks and locks correctly there, against a real Redis.
//
//   1. `npm pack` the package once (its prepack script builds it) into test/consumers/.cache/.
// 2. For each app folder (and the node22/node24 folders, Node binaries from the npm registry's `node` package): `npm
// ci` from its committed package-lock.json, skipped
//      when node_modules was installed from the same lock file by the same Node and npm (a stamp file
//      records that); then `npm install --no-save <tarball>`, every time.
//      Installing the tarball must print no npm warning naming the package (an install script, an engine, a peer).
//      test/consumers/ts7/ installs TypeScript 7 the same way (`npm ci`), for the checks that use it.
//   3. Starts a throwaway redis-server (tools/redis-server.mjs) unless REDIS_URL is set.
//   4. Runs each app's checks (below), the two apps side by side. The quick starts (the README's in the nest11-cjs
//      app, the ESM one of docs/consumers.md in the nest12-esm app) get a redis-server each, so that the answer to
//      their first request is the one the documents show.
//
// Ends with one line `consumers: N passed, N failed` and exits non-zero when a check failed.
// Each check's output is shown when it fails, or always with CONSUMERS_VERBOSE=1.
// CONSUMERS_ONLY=<text>[,<text>…] runs only the checks whose name contains one of the texts (case-insensitive), e.g.
// `nest11`, `snippet`, `nest12-esm: node:test`, plus the checks they need (the build a start needs); packing and the
// installs still run, but not those of an app that no text can select (`nest11` skips installing nest12-esm).
/* global fetch */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort, startRedisServer } from '../../tools/redis-server.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..', '..');
const cache = join(here, '.cache');
const verbose = process.env.CONSUMERS_VERBOSE === '1';
const results = [];
const only = (process.env.CONSUMERS_ONLY ?? '')
  .split(',')
  .map((text) => text.trim().toLowerCase())
  .filter(Boolean);
const APPS = ['nest11-cjs', 'nest12-esm'];
/** Whether CONSUMERS_ONLY selects the check `name` (every check without it). */
const selected = (name) => only.length === 0 || only.some((text) => name.toLowerCase().includes(text));
/** Whether a text of CONSUMERS_ONLY names `app` (`nest11`, `nest11-cjs`, `nest11-cjs: tsc…`). */
const names = (text, app) => app.includes(text) || text.startsWith(app);
/** Whether CONSUMERS_ONLY may select a check of `app`: a text naming only another app does not. */
const wanted = (app) =>
  only.length === 0 || only.some((text) => names(text, app) || !APPS.some((other) => names(text, other)));
const t0 = performance.now();
/** Node majors besides the one running this script, each from test/consumers/node<major>/, for the nest12-esm app. */
const NODE_MAJORS = [22, 24];

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

/** Runs a command; resolves with its output, rejects with an error carrying the output. */
function run(cmd, args, { cwd, env = {}, timeoutMs = 300_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(Object.assign(new Error(`${cmd} ${args.join(' ')} exited with ${signal ?? code}`), { output: out }));
    });
  });
}

/**
 * One named check: timed, recorded, its output printed when it fails. Skipped (resolving true) when CONSUMERS_ONLY
 * does not select it, unless `needed` (a selected check depends on it).
 */
async function check(name, fn, { needed = false } = {}) {
  if (!needed && !selected(name)) {
    results.push({ name, skipped: true });
    return true;
  }
  const start = performance.now();
  try {
    const output = await fn();
    results.push({ name, ok: true });
    console.log(`  ok    ${name} (${seconds(performance.now() - start)})`);
    if (verbose && output) console.log(indent(output));
    return true;
  } catch (err) {
    results.push({ name, ok: false });
    console.log(`  FAIL  ${name} (${seconds(performance.now() - start)}): ${err.message}`);
    if (err.output) console.log(indent(err.output));
    return false;
  }
}

const indent = (text) =>
  String(text)
    .trimEnd()
    .split('\n')
    .map((line) => `        ${line}`)
    .join('\n');

const npm = (args, cwd, opts = {}) => run('npm', [...args, '--no-audit', '--no-fund'], { cwd, ...opts });

/** `npm ci` unless node_modules already holds this lock file's install for this Node and npm. */
async function installDependencies(dir) {
  const stampFile = join(dir, 'node_modules', '.consumer-install-stamp');
  const npmVersion = (await run('npm', ['--version'])).trim();
  const stamp = createHash('sha256')
    .update(readFileSync(join(dir, 'package-lock.json')))
    .update(`${process.version} ${process.platform} ${process.arch} npm ${npmVersion}`)
    .digest('hex');
  if (existsSync(stampFile) && readFileSync(stampFile, 'utf8') === stamp) return 'kept node_modules';
  await npm(['ci'], dir);
  writeFileSync(stampFile, stamp);
  return 'npm ci';
}

/**
 * The app's dependencies (while the package is being packed), then the packed tarball, as
 * `npm install <tarball>` does for users (not saved).
 */
async function installApp(dir, packing) {
  const how = await installDependencies(dir);
  const tarball = await packing;
  if (!tarball) throw new Error('no tarball to install: npm pack failed');
  rmSync(join(dir, 'node_modules', 'nest-redis-locks'), { recursive: true, force: true });
  const output = await npm(['install', '--no-save', tarball], dir);
  const ours = String(output)
    .split('\n')
    .filter((line) => /^npm warn/i.test(line) && line.includes('nest-redis-locks'));
  if (ours.length > 0)
    throw Object.assign(new Error('installing the tarball printed npm warnings naming the package'), { output });
  return `${how}, then npm install --no-save ${tarball.slice(repo.length + 1)}`;
}

/** `node <main>`: waits for it to listen, increments a counter over HTTP once, checks health, stops it with SIGTERM. */
async function startAndHit(nodeBin, dir, main, redisUrl) {
  const port = await freePort();
  const child = spawn(nodeBin, [main], {
    cwd: dir,
    env: { ...process.env, PORT: String(port), REDIS_URL: redisUrl },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const fail = (message) => Object.assign(new Error(message), { output: out });
  try {
    for (const deadline = Date.now() + 20_000; !out.includes('listening on'); await sleep(50)) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw fail(`exited with ${child.signalCode ?? child.exitCode} before listening`);
      if (Date.now() > deadline) throw fail('did not listen within 20 s');
    }
    const base = `http://127.0.0.1:${port}`;
    const id = `smoke-${Date.now()}-${Math.random().toString(36).slice(2)}`;
    const inc = await fetch(`${base}/counters/${id}/increment`, { method: 'POST' });
    const body = await inc.json();
    if (inc.status !== 201 || body.value !== 1)
      throw fail(`POST /counters/${id}/increment: ${inc.status} ${JSON.stringify(body)}`);
    const health = await fetch(`${base}/health`);
    if (health.status !== 200) throw fail(`GET /health: ${health.status} ${await health.text()}`);
  } finally {
    child.kill('SIGTERM');
  }
  const { code, signal } = await Promise.race([exited, sleep(10_000, { code: 'still running 10 s after SIGTERM' })]);
  // Nest's shutdown hooks close the app, then re-raise the signal: exit code 0 or death by SIGTERM both mean it
  // stopped.
  if (code !== 0 && signal !== 'SIGTERM') {
    child.kill('SIGKILL');
    throw fail(`did not stop on SIGTERM: ${signal ?? code}`);
  }
  return out;
}

const tsc = (dir, project) =>
  run(process.execPath, [join(dir, 'node_modules/typescript/bin/tsc'), '-p', project], { cwd: dir });

/** TypeScript 7's tsc, from test/consumers/ts7/ (installed before the apps are checked). */
const TS7_TSC = join(here, 'ts7', 'node_modules/typescript/bin/tsc');
const tsc7 = (dir, project, ...args) => run(process.execPath, [TS7_TSC, '-p', project, ...args], { cwd: dir });

/**
 * A documented quick start, as written (test/docs/write-quick-start.ts writes its files), in the folder
 * `.cache/quick-start-<app>/` whose node_modules is the app's (the installed tarball, the app's Nest): built with
 * TypeScript 7's `tsc`, started with `node` against a redis-server of its own; the documented request must get the
 * documented answer, byte for byte; SIGTERM stops it.
 */
async function runQuickStart(app, doc, section) {
  const dir = join(cache, `quick-start-${app}`);
  rmSync(dir, { recursive: true, force: true });
  const written = await run(
    process.execPath,
    ['--import', './test/support/register-ts.mjs', 'test/docs/write-quick-start.ts', dir, doc, section],
    { cwd: repo },
  );
  const { entry, method, path, answer } = JSON.parse(written.trim().split('\n').pop());
  symlinkSync(join(here, app, 'node_modules'), join(dir, 'node_modules'), 'dir');
  const built = await tsc7(dir, 'tsconfig.json'); // `npx tsc`
  const redis = await startRedisServer();
  try {
    const port = await freePort();
    const child = spawn(process.execPath, [entry], {
      cwd: dir,
      env: { ...process.env, PORT: String(port), REDIS_URL: redis.url },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = built;
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
    const fail = (message) => Object.assign(new Error(message), { output: out });
    try {
      let res;
      for (const deadline = Date.now() + 20_000; !res;) {
        if (child.exitCode !== null || child.signalCode !== null)
          throw fail(`exited with ${child.signalCode ?? child.exitCode} before answering`);
        if (Date.now() > deadline) throw fail('did not answer within 20 s');
        res = await fetch(`http://127.0.0.1:${port}${path}`, { method }).catch(() => sleep(100));
      }
      const text = await res.text();
      if (text !== answer) throw fail(`${method} ${path} answered ${res.status} ${text}, the document shows ${answer}`);
    } finally {
      child.kill('SIGTERM');
    }
    const { code, signal } = await Promise.race([exited, sleep(10_000, { code: 'still running 10 s after SIGTERM' })]);
    if (code !== 0 && signal !== 'SIGTERM') {
      child.kill('SIGKILL');
      throw fail(`did not stop on SIGTERM: ${signal ?? code}`);
    }
    return `${doc} "${section}" in ${dir.slice(repo.length + 1)}: ${method} ${path} -> ${answer}`;
  } finally {
    await redis.stop();
  }
}

/**
 * The TypeScript blocks of README.md and docs/*.md for `shape` (`// ESM only` ones for esm only), written into
 * `<dir>/doc-snippets/` by test/docs/write-snippets.ts (the extraction test/docs/snippets.spec.ts compiles), compiled
 * by the app's own tsc with a tsconfig extending the app's: `nest-redis-locks` is the installed tarball, `@nestjs/*`
 * the app's Nest. Problems are reported at the documents' lines (`docs/locks.md:42:7: error TS…`).
 */
async function docSnippets(dir, shape) {
  const written = await run(
    process.execPath,
    ['--import', './test/support/register-ts.mjs', 'test/docs/write-snippets.ts', dir, shape],
    {
      cwd: repo,
    },
  );
  const origins = JSON.parse(readFileSync(join(dir, 'doc-snippets', 'origins.json'), 'utf8'));
  try {
    await run(
      process.execPath,
      [join(dir, 'node_modules/typescript/bin/tsc'), '-p', 'doc-snippets/tsconfig.json', '--pretty', 'false'],
      { cwd: dir },
    );
  } catch (err) {
    err.output = String(err.output ?? '').replace(
      /^(doc-snippets\/[^(\n]+)\((\d+),(\d+)\)/gm,
      (whole, file, line, col) => {
        const origin = origins[file];
        return origin ? `${origin.doc}:${origin.line + Number(line) - 1}:${col} (${file})` : whole;
      },
    );
    throw err;
  }
  return written;
}

async function nest11(redisUrl) {
  const dir = join(here, 'nest11-cjs');
  const env = { REDIS_URL: redisUrl };
  const started = 'nest11-cjs: node dist/main.js starts, locks a request, stops';
  rmSync(join(dir, 'dist'), { recursive: true, force: true });
  await Promise.all([
    // The starter's settings: module commonjs (moduleResolution node10), emitting dist/ for `node dist/main.js`.
    check('nest11-cjs: tsc, module commonjs (the starter)', () => tsc(dir, 'tsconfig.build.json'), {
      needed: selected(started),
    }),
    // `require` resolution through `exports`: TS1479 here when the package had no `require` condition.
    check('nest11-cjs: tsc, module/moduleResolution nodenext, skipLibCheck off', () =>
      tsc(dir, 'tsconfig.nodenext.json'),
    ),
    check('nest11-cjs: tsc, module/moduleResolution node16', () => tsc(dir, 'tsconfig.node16.json')),
    // TypeScript 7 removed baseUrl, which the starter sets: tsconfig.ts7.json is the starter's settings without it.
    check('nest11-cjs: tsc, TypeScript 7, module commonjs (the starter without baseUrl), skipLibCheck off', () =>
      tsc7(dir, 'tsconfig.ts7.json'),
    ),
    check(
      'nest11-cjs: the README quick start as written (CommonJS), TypeScript 7: builds, starts, answers as shown',
      () => runQuickStart('nest11-cjs', 'README.md', 'Quick start'),
    ),
    check('nest11-cjs: every documentation snippet compiles (TypeScript 5.8, Nest 11 types)', () =>
      docSnippets(dir, 'commonjs'),
    ),
  ]);
  await check('nest11-cjs: jest + ts-jest (CommonJS) specs against Redis', () =>
    run(process.execPath, [join(dir, 'node_modules/jest/bin/jest.js'), '--runInBand', '--ci'], { cwd: dir, env }),
  );
  await check(started, () => startAndHit(process.execPath, dir, 'dist/main.js', redisUrl));
}

async function nest12(redisUrl, otherNodes) {
  const dir = join(here, 'nest12-esm');
  const env = { REDIS_URL: redisUrl };
  rmSync(join(dir, 'dist'), { recursive: true, force: true });
  const nodes = [
    { label: `Node ${process.versions.node}`, bin: process.execPath },
    ...otherNodes.sort((a, b) => a.major - b.major),
  ];
  const runs = nodes.flatMap(({ label }) => [
    `nest12-esm: node:test specs against Redis (${label})`,
    `nest12-esm: node dist/src/main.js starts, locks a request, stops (${label})`,
  ]);
  const compiled = await check(
    'nest12-esm: tsc, nodenext (ESM), TypeScript 6, skipLibCheck off',
    () => tsc(dir, 'tsconfig.json'),
    {
      needed: runs.some(selected),
    },
  );
  await Promise.all([
    check('nest12-esm: tsc, nodenext (ESM), TypeScript 7, skipLibCheck off', () =>
      tsc7(dir, 'tsconfig.json', '--noEmit'),
    ),
    check('nest12-esm: the ESM quick start as written, TypeScript 7: builds, starts, answers as shown', () =>
      runQuickStart('nest12-esm', 'docs/consumers.md', 'ESM quick start'),
    ),
  ]);
  if (!compiled || !runs.some(selected)) return;
  const tests = readdirSync(join(dir, 'dist/test'))
    .filter((f) => f.endsWith('.test.js'))
    .map((f) => `dist/test/${f}`);
  for (const { label, bin } of nodes) {
    await check(`nest12-esm: node:test specs against Redis (${label})`, () =>
      run(bin, ['--test', ...tests], { cwd: dir, env }),
    );
    await check(`nest12-esm: node dist/src/main.js starts, locks a request, stops (${label})`, () =>
      startAndHit(bin, dir, 'dist/src/main.js', redisUrl),
    );
  }
}

let server;
let exitCode = 1;
try {
  console.log('consumers: packing the package and installing the apps');
  mkdirSync(cache, { recursive: true });
  for (const f of readdirSync(cache)) if (f.endsWith('.tgz')) rmSync(join(cache, f));
  let tarball;
  const packing = check(
    'npm pack (its prepack script builds the package)',
    async () => {
      const out = await npm(['pack', '--json', '--pack-destination', cache], repo);
      const [packed] = JSON.parse(out.slice(out.indexOf('[\n')));
      tarball = join(cache, packed.filename);
      return `${packed.filename}: ${packed.entryCount} files, ${(packed.size / 1024).toFixed(0)} kB`;
    },
    { needed: true },
  ).then((ok) => (ok ? tarball : null));
  const otherNodes = [];
  await Promise.all([
    ...APPS.filter(wanted).map((app) =>
      check(`${app}: install`, () => installApp(join(here, app), packing), { needed: true }),
    ),
    check('ts7: install TypeScript 7 from the npm registry', () => installDependencies(join(here, 'ts7')), {
      needed: true,
    }),
    ...(wanted('nest12-esm') ? NODE_MAJORS : []).map((major) =>
      check(
        `node${major}: install Node ${major} from the npm registry (package node)`,
        async () => {
          const dir = join(here, `node${major}`);
          const how = await installDependencies(dir);
          const bin = join(dir, 'node_modules/node/bin/node');
          const version = (await run(bin, ['--version'])).trim();
          if (!version.startsWith(`v${major}.`)) throw new Error(`expected Node ${major}, got ${version}`);
          otherNodes.push({ bin, major, label: `Node ${version.slice(1)}` });
          return how;
        },
        { needed: true },
      ),
    ),
  ]);

  let redisUrl = process.env.REDIS_URL;
  if (!redisUrl) {
    server = await startRedisServer();
    redisUrl = server.url;
    console.log(`consumers: redis-server started at ${redisUrl}`);
  }

  console.log('consumers: checking the apps');
  const installed = (name) => results.some((r) => r.name === `${name}: install` && r.ok);
  await Promise.all([
    installed('nest11-cjs') ? nest11(redisUrl) : undefined,
    installed('nest12-esm') ? nest12(redisUrl, otherNodes) : undefined,
  ]);
  exitCode = results.every((r) => r.ok || r.skipped) ? 0 : 1;
} catch (err) {
  console.error(`consumers: ${err.message}`);
  if (err.output) console.error(indent(err.output));
} finally {
  if (server) await server.stop();
}

const passed = results.filter((r) => r.ok).length;
const skipped = results.filter((r) => r.skipped).length;
const failed = results.length - passed - skipped;
console.log(`consumers: done in ${seconds(performance.now() - t0)}`);
console.log(
  `consumers: ${passed} passed, ${failed} failed${only.length ? `, ${skipped} skipped (CONSUMERS_ONLY=${process.env.CONSUMERS_ONLY})` : ''}`,
);
process.exit(failed > 0 ? 1 : exitCode);
