// The package.json that goes into the tarball, without the scripts that are only for this repository.
//
// `prepare` (the build) is what makes `npm ci` in a clone and `npm install github:…` (npm clones, installs the
// development dependencies and runs `prepare`) produce dist/. A tarball already holds dist/ and npm runs no
// `prepare` when installing one, yet npm 11 lists a dependency's `prepare` among the install scripts "not yet covered
// by allowScripts". So `npm pack` and `npm publish` pack a package.json without it:
//
//   prepack:  npm run build && node tools/pack-manifest.mjs strip     (keeps the original in PACK_BACKUP)
//   postpack: node tools/pack-manifest.mjs restore
//
// A pack that failed between the two leaves the backup behind; the next `strip` or `restore` puts it back first.
// tools/check-package.mjs packs through `withPackManifest` and checks the tarball's scripts.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The scripts left out of the packed package.json. */
export const REPOSITORY_SCRIPTS = ['prepare', 'prepack', 'postpack'];

/**
 * Scripts npm would run, or list as not covered by allowScripts, when an application installs the package; none
 * may be in the tarball.
 */
export const INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall', 'prepare'];

/** Where the original package.json waits while packing (git-ignored). */
export const PACK_BACKUP = '.package.json.before-pack';

/** Puts the original package.json back, if a backup is waiting. */
export function restore(dir = root) {
  const backup = join(dir, PACK_BACKUP);
  if (existsSync(backup)) renameSync(backup, join(dir, 'package.json'));
}

/** Keeps package.json in PACK_BACKUP and writes it without REPOSITORY_SCRIPTS, in the same layout. */
export function strip(dir = root) {
  restore(dir);
  const file = join(dir, 'package.json');
  const text = readFileSync(file, 'utf8');
  const pkg = JSON.parse(text);
  for (const name of REPOSITORY_SCRIPTS) delete pkg.scripts?.[name];
  writeFileSync(join(dir, PACK_BACKUP), text);
  writeFileSync(file, `${JSON.stringify(pkg, null, 2)}\n`);
}

/** Runs `fn` (which packs) on the stripped package.json, then restores it, whatever `fn` does. */
export function withPackManifest(fn, dir = root) {
  strip(dir);
  try {
    return fn();
  } finally {
    restore(dir);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const command = process.argv[2];
  if (command === 'strip') strip();
  else if (command === 'restore') restore();
  else {
    console.error('usage: node tools/pack-manifest.mjs strip|restore');
    process.exit(2);
  }
}
