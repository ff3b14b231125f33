// `npm run check:package`, run by `npm test` right after `npm run build`: checks the package as npm would
// publish it, on one tarball packed from the current build (`npm pack --ignore-scripts`, so that the check
// sees exactly the build the tests ran against).
//   - publint, strict, at its most detailed level: any message (error, warning or suggestion) fails.
//   - @arethetypeswrong/cli: every entry point (`.`, `./health`, `./package.json`) must resolve to JavaScript
//     and to types of the matching format under node10, node16 from CommonJS, node16 from ESM and bundler.
//     No problem kind is ignored.
//   - Our own: what ships is what we mean to ship (LICENSE, README, CHANGELOG, both builds, lib/ sources without
//     specs, nothing else), its package.json has no install script (tools/pack-manifest.mjs), and every source
//     map's `sources` resolve to a shipped file.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';
import { INSTALL_SCRIPTS, withPackManifest } from './pack-manifest.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const work = mkdtempSync(join(tmpdir(), 'nest-redis-locks-pack-'));
const failures = [];

try {
  // The package.json as `npm pack` packs it (prepack strips the repository's scripts), on the current build.
  const packed = withPackManifest(() =>
    spawnSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], {
      cwd: root,
      encoding: 'utf8',
    }),
  );
  if (packed.status !== 0) throw new Error(`npm pack failed:\n${packed.stderr}`);
  const tarball = join(work, JSON.parse(packed.stdout)[0].filename);
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

  // publint
  const bytes = readFileSync(tarball);
  const lint = await publint({
    pack: { tarball: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) },
    level: 'suggestion',
    strict: true,
  });
  for (const message of lint.messages) failures.push(`publint ${message.type}: ${formatMessage(message, pkg)}`);
  console.log(
    `check:package: publint ${lint.messages.length === 0 ? 'found nothing' : `found ${lint.messages.length} problem(s)`}`,
  );

  // @arethetypeswrong/cli (prints its own table)
  const attwBin = join(dirname(require.resolve('@arethetypeswrong/cli/package.json')), 'dist', 'index.js');
  const attw = spawnSync(process.execPath, [attwBin, tarball], { stdio: 'inherit' });
  if (attw.status !== 0) failures.push('@arethetypeswrong/cli reported problems (table above)');

  // What ships, and whether the source maps resolve inside it.
  const unpacked = join(work, 'unpacked');
  spawnSync('mkdir', ['-p', unpacked]);
  const untar = spawnSync('tar', ['-xzf', tarball, '-C', unpacked], { encoding: 'utf8' });
  if (untar.status !== 0) throw new Error(`tar failed: ${untar.stderr}`);
  const pkgRoot = join(unpacked, 'package');
  const files = listFiles(pkgRoot).map((f) => relative(pkgRoot, f));
  const allowed = [
    /^(package\.json|README\.md|LICENSE|CHANGELOG\.md)$/,
    /^dist\/(esm|cjs)\/.+\.(js|d\.ts|js\.map|d\.ts\.map)$/,
    /^dist\/cjs\/package\.json$/,
    /^lib\/.+(?<!\.spec)\.ts$/,
  ];
  for (const f of files) if (!allowed.some((re) => re.test(f))) failures.push(`unexpected file in the package: ${f}`);
  // A script an application's npm would run or flag at install ("not yet covered by allowScripts"): none.
  const shippedScripts = JSON.parse(readFileSync(join(pkgRoot, 'package.json'), 'utf8')).scripts ?? {};
  for (const name of INSTALL_SCRIPTS)
    if (name in shippedScripts) failures.push(`the packed package.json has an install script: ${name}`);
  for (const f of [
    'LICENSE',
    'README.md',
    'CHANGELOG.md',
    'dist/cjs/package.json',
    'dist/esm/index.js',
    'dist/cjs/index.js',
  ]) {
    if (!files.includes(f)) failures.push(`missing from the package: ${f}`);
  }
  let maps = 0;
  for (const f of files.filter((name) => name.endsWith('.map'))) {
    maps += 1;
    const map = JSON.parse(readFileSync(join(pkgRoot, f), 'utf8'));
    for (const source of map.sources) {
      const target = relative(pkgRoot, resolve(dirname(join(pkgRoot, f)), map.sourceRoot ?? '', source));
      if (!files.includes(target)) failures.push(`${f}: source ${source} (${target}) is not in the package`);
    }
  }
  console.log(`check:package: ${files.length} files in the tarball, ${maps} source maps checked`);
} catch (err) {
  failures.push(err.message);
} finally {
  rmSync(work, { recursive: true, force: true });
}

if (failures.length > 0) {
  console.error(`check:package: FAILED\n${failures.map((f) => `  - ${f}`).join('\n')}`);
  process.exit(1);
}
console.log('check:package: publint, attw and the file list are clean');

function listFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? listFiles(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}
