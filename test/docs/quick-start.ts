// The quick starts of the documentation, as a reader follows them: their commands, files, request and answer. Used by
// test/docs/quick-start.spec.ts (the repository's build, TypeScript and Nest) and, through write-quick-start.ts, by
// `npm run test:consumers` (the packed package, the apps' Nest, TypeScript 7).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { codeBlocks, projectDocs } from './markdown.js';
import { snippetsOf } from './snippets.js';
import type { Snippet } from './snippets.js';

/** The quick starts: the README's (the `nest new` shape, CommonJS) and the ESM one of docs/consumers.md. */
export const QUICK_STARTS = [
  { doc: 'README.md', section: 'Quick start' },
  { doc: 'docs/consumers.md', section: 'ESM quick start' },
] as const;

export interface QuickStart {
  readonly doc: string;
  readonly section: string;
  /** Every line of its shell blocks. */
  readonly shell: readonly string[];
  /** The packages its `npm install` lines install (a `github:` one by its repository's name, without versions). */
  readonly installed: readonly string[];
  /** Its `// src/….ts` blocks. */
  readonly files: readonly Snippet[];
  /** Its `tsconfig.json` block. */
  readonly tsconfig: string | undefined;
  /** `commonjs`, or `module` when it runs `npm pkg set type=module`. */
  readonly type: 'commonjs' | 'module';
  /** The line that starts it (`… node dist/main.js`), the `curl` line and the answer shown. */
  readonly run: string | undefined;
  readonly curl: string | undefined;
  readonly answer: string | undefined;
}

/** The quick start under the heading `section` of `doc`. */
export function quickStart(doc: string, section: string): QuickStart {
  const document = projectDocs().find((d) => d.path === doc);
  if (!document) throw new Error(`${doc} is not a project document`);
  const blocks = codeBlocks(document.text).filter((b) => b.section === section);
  const shell = blocks.filter((b) => b.lang === 'bash').flatMap((b) => b.code.split('\n').map((l) => l.trim()));
  const installed = shell
    .filter((l) => l.startsWith('npm install'))
    .flatMap((l) => l.split(/\s+/).slice(2))
    .filter((w) => !w.startsWith('-'))
    .map((w) => (w.startsWith('github:') ? w.split('/').pop()! : w.replace(/(.)@[^/]*$/, '$1')));
  return {
    doc,
    section,
    shell,
    installed,
    files: snippetsOf([document]).filter((s) => s.block.section === section && s.file),
    tsconfig: blocks.find((b) => b.lang === 'json')?.code,
    type: shell.some((l) => l.includes('npm pkg set type=module')) ? 'module' : 'commonjs',
    run: shell.find((l) => /\bnode \S+\.js\b/.test(l)),
    curl: shell.find((l) => l.startsWith('curl ')),
    answer: blocks.find((b) => b.lang === 'text')?.code.trim(),
  };
}

/** Writes its `tsconfig.json` and source files into `dir`, as the reader does (package.json is the caller's). */
export function writeQuickStart(q: QuickStart, dir: string): void {
  if (!q.tsconfig) throw new Error(`${q.doc} (${q.section}) has no tsconfig.json block`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'tsconfig.json'), q.tsconfig);
  for (const f of q.files) {
    mkdirSync(join(dir, dirname(f.file!)), { recursive: true });
    writeFileSync(join(dir, f.file!), f.block.code);
  }
}

/** The file `node` starts (`dist/main.js`), and the documented request: its method and path. */
export function request(q: QuickStart): { entry: string; method: string; path: string } {
  const entry = /\bnode (\S+\.js)\b/.exec(q.run ?? '')?.[1];
  const curl = /curl\s+-X\s+(\w+)\s+(\S+)/.exec(q.curl ?? '');
  if (!entry || !curl) throw new Error(`${q.doc} (${q.section}): no start command or curl`);
  return { entry, method: curl[1], path: new URL(curl[2]).pathname };
}
