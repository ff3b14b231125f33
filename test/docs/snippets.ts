// Compiles the TypeScript code blocks of the documentation the way applications compile them: as a Nest 11-style
// CommonJS project (the starter's compiler settings) and as an ESM project (`module: nodenext` in a `"type":
// "module"` package), each importing `nest-redis-locks` as installed: through its package.json `exports`/`types`, so
// against the built declarations in dist/, never the sources.
//
// Conventions (docs/README.md, "Code in these guides"):
// - every ```ts (or ```typescript) block is a complete module, compiled on its own;
// - a block whose first line is `// <path>.ts` (e.g. `// src/app.module.ts`) is that file of the document's one
//   project: the blocks of a project are compiled together, so they may import each other;
// - a block whose first line starts with `// ESM only` (top-level await, …) is compiled only as ESM;
// - `<!-- snippet: commonjs only -->` on the last line before the fence compiles a block only as CommonJS (the files
//   of a `nest new`-shaped project, whose relative imports have no `.js`);
// - `<!-- snippet: fragment -->` on the last line before the fence leaves a block out (a fragment on purpose).
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';
import { ROOT, codeBlocks } from './markdown.js';
import type { CodeBlock, Doc } from './markdown.js';

/** How a project compiles its sources. */
export type Shape = 'commonjs' | 'esm';

/** A TypeScript block of a document, as the tests compile it. */
export interface Snippet {
  readonly doc: string;
  readonly block: CodeBlock;
  /** `// <path>.ts` on the first line: a file of the document's project. */
  readonly file: string | undefined;
  readonly esmOnly: boolean;
  readonly commonjsOnly: boolean;
}

/** The marker that leaves a block out. */
export const FRAGMENT_MARKER = '<!-- snippet: fragment -->';

/** The marker that compiles a block only as CommonJS. */
export const COMMONJS_MARKER = '<!-- snippet: commonjs only -->';

/** Every TypeScript block of `docs` that is not marked as a fragment. */
export function snippetsOf(docs: readonly Doc[]): Snippet[] {
  return docs.flatMap((doc) =>
    codeBlocks(doc.text)
      .filter((block) => (block.lang === 'ts' || block.lang === 'typescript') && block.before !== FRAGMENT_MARKER)
      .map((block) => {
        const first = block.code.split('\n')[0].trim();
        return {
          doc: doc.path,
          block,
          file: /^\/\/\s*([\w@./-]+\.ts)\s*$/.exec(first)?.[1],
          esmOnly: /^\/\/\s*ESM only\b/i.test(first),
          commonjsOnly: block.before === COMMONJS_MARKER,
        };
      }),
  );
}

/** Compiler settings per shape. */
export function compilerOptions(shape: Shape): ts.CompilerOptions {
  const common: ts.CompilerOptions = {
    noEmit: true,
    experimentalDecorators: true,
    emitDecoratorMetadata: true,
    skipLibCheck: true,
    types: ['node'],
    moduleDetection: ts.ModuleDetectionKind.Force, // every block is a module, even without import or export
  };
  if (shape === 'commonjs') {
    // The Nest 11 starter's tsconfig.json (nest new), which resolves packages the node10 way (`types`,
    // `typesVersions`).
    return {
      ...common,
      module: ts.ModuleKind.CommonJS,
      moduleResolution: ts.ModuleResolutionKind.Node10,
      target: ts.ScriptTarget.ES2023,
      allowSyntheticDefaultImports: true,
      esModuleInterop: true,
      strictNullChecks: true,
      forceConsistentCasingInFileNames: true,
      noImplicitAny: false,
      strictBindCallApply: false,
      noFallthroughCasesInSwitch: false,
      ignoreDeprecations: '6.0',
    };
  }
  // An ESM app (Nest 12): nodenext in a "type": "module" package, strict, isolatedModules as SWC and esbuild need.
  return {
    ...common,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2023,
    strict: true,
    isolatedModules: true,
  };
}

/**
 * A folder shaped like an application that installed the package: package.json of `shape`, and a node_modules whose
 * entries link to this repository's (the peers: Nest, ioredis, rxjs, …) plus `nest-redis-locks` linking to the
 * repository itself, so that Node and TypeScript resolve it through its package.json as from the registry.
 */
export function consumerProject(dir: string, shape: Shape): void {
  mkdirSync(join(dir, 'node_modules'), { recursive: true });
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: `docs-${shape}`, private: true, type: shape === 'esm' ? 'module' : 'commonjs' }),
  );
  for (const entry of readdirSync(join(ROOT, 'node_modules'))) {
    if (entry.startsWith('.')) continue;
    symlinkSync(join(ROOT, 'node_modules', entry), join(dir, 'node_modules', entry), 'dir');
  }
  symlinkSync(ROOT, join(dir, 'node_modules', 'nest-redis-locks'), 'dir');
}

/**
 * Throws unless dist/ holds a build at least as new as every source file of lib/ (the types the blocks compile
 * against).
 */
export function assertBuilt(): void {
  const built = ['dist/esm/index.d.ts', 'dist/cjs/index.d.ts'].map((f) => join(ROOT, f));
  const missing = built.find((f) => !existsSync(f));
  if (missing) throw new Error(`${relative(ROOT, missing)} is missing: run \`npm run build\` first (npm test does)`);
  const builtAt = Math.min(...built.map((f) => statSync(f).mtimeMs));
  const newer = sources(join(ROOT, 'lib')).find((f) => statSync(f).mtimeMs > builtAt);
  if (newer)
    throw new Error(`${relative(ROOT, newer)} is newer than dist/: run \`npm run build\` first (npm test does)`);
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts') ? [path] : [];
  });
}

/**
 * Writes `snippets` (those that apply to `shape`) as files under `dir`: a document's project blocks (`// src/x.ts`)
 * under `<doc>/project/`, every other block as `<doc>/block-<n>-line-<line>.ts`. Returns each written file with the
 * block written to it, verbatim. Also used by `npm run test:consumers` (test/consumers/write-snippets.ts), which
 * compiles them with the consumer apps' own TypeScript and dependencies.
 */
export function writeSnippets(snippets: readonly Snippet[], shape: Shape, dir: string): Map<string, Snippet> {
  const origins = new Map<string, Snippet>();
  for (const [i, snippet] of snippets.entries()) {
    if ((snippet.esmOnly && shape !== 'esm') || (snippet.commonjsOnly && shape !== 'commonjs')) continue;
    const docDir = snippet.doc.replace(/\.md$/, '').replace(/[^\w-]+/g, '_');
    const path = snippet.file
      ? join(dir, docDir, 'project', snippet.file)
      : join(dir, docDir, `block-${i + 1}-line-${snippet.block.line}.ts`);
    if (origins.has(path))
      throw new Error(`${snippet.doc}:${snippet.block.line}: a second block names the file ${snippet.file}`);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, snippet.block.code);
    origins.set(path, snippet);
  }
  return origins;
}

/**
 * Compiles `snippets` (those that apply to `shape`) in a consumer project of that shape under `dir`; returns one line
 * per problem, `<doc>:<line> (<shape>): <message>`, or nothing when every block compiles.
 */
export function compileSnippets(snippets: readonly Snippet[], shape: Shape, dir: string): string[] {
  rmSync(dir, { recursive: true, force: true });
  consumerProject(dir, shape);
  const origins = writeSnippets(snippets, shape, dir);
  const program = ts.createProgram([...origins.keys()], compilerOptions(shape));
  const problems = ts.getPreEmitDiagnostics(program).map((d) => {
    const message = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    const origin = d.file ? origins.get(d.file.fileName) : undefined;
    if (!d.file || !origin)
      return {
        at: [d.file ? relative(dir, d.file.fileName) : '', 0] as const,
        text: `(${shape}): TS${d.code} ${message}`,
      };
    const line = origin.block.line + d.file.getLineAndCharacterOfPosition(d.start ?? 0).line;
    return { at: [origin.doc, line] as const, text: `${origin.doc}:${line} (${shape}): TS${d.code} ${message}` };
  });
  // In document order, so that the first problem of a document is read first.
  return problems.sort((a, b) => a.at[0].localeCompare(b.at[0]) || a.at[1] - b.at[1]).map((p) => p.text);
}
