// `node --import ./test/support/register-ts.mjs test/docs/write-snippets.ts <app folder> <commonjs|esm>`, run by
// `npm run test:consumers` (test/consumers/run.mjs): writes the TypeScript blocks of README.md and docs/*.md that apply
// to the shape (the `// ESM only` ones for esm only) into `<app folder>/doc-snippets/`, as snippets.spec.ts compiles
// them, with
// - `tsconfig.json`, extending the app's own tsconfig.json (its module settings; no emit; every block a module),
//   so that the app's TypeScript compiles them against its node_modules: the installed tarball, its Nest version;
// - `origins.json`: each written file (relative to the app folder) -> the document and line of its block's first
//   line, for reporting problems at the document's lines.
import { rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { projectDocs } from './markdown.js';
import { snippetsOf, writeSnippets } from './snippets.js';
import type { Shape } from './snippets.js';

/** The folder, inside the app, that receives the blocks (git-ignored, excluded from the app's own builds). */
const SNIPPETS_FOLDER = 'doc-snippets';

const [app, shape] = process.argv.slice(2);
if (!app || (shape !== 'commonjs' && shape !== 'esm')) {
  console.error('usage: write-snippets.ts <app folder> <commonjs|esm>');
  process.exit(2);
}
const appDir = resolve(app);
const dir = join(appDir, SNIPPETS_FOLDER);
rmSync(dir, { recursive: true, force: true });
const origins = writeSnippets(snippetsOf(projectDocs()), shape as Shape, dir);
const tsconfig = {
  extends: '../tsconfig.json',
  compilerOptions: { noEmit: true, moduleDetection: 'force' },
  include: ['**/*.ts'],
};
writeFileSync(join(dir, 'tsconfig.json'), `${JSON.stringify(tsconfig, null, 2)}\n`);
const map = Object.fromEntries(
  [...origins].map(([path, s]) => [relative(appDir, path).split('\\').join('/'), { doc: s.doc, line: s.block.line }]),
);
writeFileSync(join(dir, 'origins.json'), `${JSON.stringify(map, null, 2)}\n`);
console.log(
  `${origins.size} blocks of ${new Set([...origins.values()].map((s) => s.doc)).size} documents written to ${relative(process.cwd(), dir) || '.'}`,
);
