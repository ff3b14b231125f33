import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';

/**
 * The folders of `lib/`, from the top floor down (docs/internals.md, "Where things live"): a folder imports only from
 * folders after it in this list. Specs are left out (a spec may use whatever it tests with).
 */
const FLOORS = [
  ['board', 'cli', 'health'],
  ['schedule'],
  ['decorators'],
  ['testing'],
  ['nest'],
  ['observability'],
  ['read-model'],
  ['locking'],
  ['leader'],
  ['redis'],
  ['store'],
  ['common'],
  ['errors', 'types'],
];
/** Folders that stay free of the framework (DESIGN: the engine and what is under it do not import `@nestjs/*`). */
const FRAMEWORK_FREE = ['read-model', 'locking', 'leader', 'redis', 'store', 'common', 'errors', 'types'];

const lib = resolve(dirname(fileURLToPath(import.meta.url)), '../../lib');
const floorOf = new Map(FLOORS.flatMap((folders, i) => folders.map((f) => [f, i] as const)));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts') ? [path] : [];
  });
}

const files = sources(lib).map((path) => ({
  path,
  folder: relative(lib, path).split('/')[0],
  text: readFileSync(path, 'utf8'),
}));

describe('layers of lib/', () => {
  it('every folder of lib/ has its floor', () => {
    const folders = new Set(files.map((f) => f.folder).filter((f) => !f.endsWith('.ts')));
    expect([...folders].filter((f) => !floorOf.has(f))).toEqual([]);
  });

  it('no folder imports from a folder above it', () => {
    const upward: string[] = [];
    for (const file of files) {
      const floor = floorOf.get(file.folder);
      if (floor === undefined) continue; // lib/index.ts: the entry point re-exports every floor
      for (const m of file.text.matchAll(/from '(\.{1,2}\/[^']+)'/g)) {
        const target = relative(lib, resolve(dirname(file.path), m[1])).split('/')[0];
        const targetFloor = floorOf.get(target);
        if (targetFloor !== undefined && targetFloor < floor) upward.push(`${relative(lib, file.path)} -> ${m[1]}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('the engine and the folders under it import no @nestjs/*', () => {
    const nest = files
      .filter((f) => FRAMEWORK_FREE.includes(f.folder) && /from '@nestjs\//.test(f.text))
      .map((f) => relative(lib, f.path));
    expect(nest).toEqual([]);
  });
});
