import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectDocs } from './markdown.js';
import { COMMONJS_MARKER, FRAGMENT_MARKER, assertBuilt, compileSnippets, snippetsOf } from './snippets.js';
import type { Shape } from './snippets.js';

/** Every TypeScript block of README.md and docs/*.md compiles as users compile it (see snippets.ts). */
describe('documentation snippets', () => {
  let work: string;
  beforeAll(() => {
    assertBuilt();
    work = mkdtempSync(join(tmpdir(), 'nest-redis-locks-snippets-'));
  });
  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const snippets = snippetsOf(projectDocs());

  it('finds the blocks of the README and of every guide', () => {
    expect(snippets.filter((s) => s.doc === 'README.md').length).toBeGreaterThanOrEqual(7);
    expect(new Set(snippets.map((s) => s.doc)).size).toBeGreaterThanOrEqual(5);
  });

  it.each<[Shape, string]>([
    ['commonjs', 'a Nest 11-style CommonJS app (the starter’s tsconfig: module commonjs)'],
    ['esm', 'an ESM app (module nodenext, "type": "module", strict, isolatedModules)'],
  ])(
    'compile in %s: %s',
    (shape) => {
      expect(compileSnippets(snippets, shape, join(work, shape))).toEqual([]);
    },
    120_000,
  );

  // The checker itself: a block that does not compile must fail the test, as a renamed option would.
  describe('catch broken snippets', () => {
    const doc = (text: string) => snippetsOf([{ path: 'docs/broken.md', text }]);
    const ts = (code: string, before = '') => `# Guide\n\n${before}\n\`\`\`ts\n${code}\n\`\`\`\n`;

    it('a misspelt option fails in both shapes, naming the document and line', () => {
      const broken = doc(
        ts(
          `import { RedisLockModule } from 'nest-redis-locks';\n\nexport const m = RedisLockModule.forRoot({ redis: 'redis://r', leaseMS: 5 });`,
        ),
      );
      for (const shape of ['commonjs', 'esm'] as const) {
        const problems = compileSnippets(broken, shape, join(work, `broken-${shape}`));
        expect(problems).toHaveLength(1);
        expect(problems[0]).toMatch(new RegExp(`^docs/broken\\.md:7 \\(${shape}\\): TS2561 .*leaseMS`));
      }
    });

    it('top-level await fails as CommonJS unless the block says `// ESM only`', () => {
      const code = `import { LockEngine } from 'nest-redis-locks';\nconst engine = new LockEngine({ redis: 'redis://r' });\nawait engine.close();`;
      expect(compileSnippets(doc(ts(code)), 'commonjs', join(work, 'tla-cjs')).join('\n')).toMatch(
        /^docs\/broken\.md:7 \(commonjs\): TS1378 /,
      );
      expect(compileSnippets(doc(ts(code)), 'esm', join(work, 'tla-esm'))).toEqual([]);
      expect(
        compileSnippets(doc(ts(`// ESM only: top-level await\n${code}`)), 'commonjs', join(work, 'tla-marked')),
      ).toEqual([]);
    });

    it('a relative import without .js fails as ESM unless the block is marked CommonJS only', () => {
      const text = (before: string) =>
        ts(`// src/a.ts\nexport const a = 1;`) +
        ts(`// src/b.ts\nimport { a } from './a';\nexport const b = a;`, before);
      expect(compileSnippets(doc(text('')), 'esm', join(work, 'extensionless-esm')).join('\n')).toMatch(
        /^docs\/broken\.md:13 \(esm\): TS2835 /,
      );
      expect(compileSnippets(doc(text('')), 'commonjs', join(work, 'extensionless-cjs'))).toEqual([]);
      expect(compileSnippets(doc(text(COMMONJS_MARKER)), 'esm', join(work, 'extensionless-marked'))).toEqual([]);
    });

    it('blocks naming a file form one project; a fragment marker leaves a block out', () => {
      const text =
        ts(`// src/a.ts\nexport const a = 1;`) +
        ts(`// src/b.ts\nimport { a } from './a.js';\nexport const b: string = a;`) +
        ts(`this is not TypeScript`, FRAGMENT_MARKER);
      const problems = compileSnippets(doc(text), 'esm', join(work, 'project'));
      expect(problems).toEqual([
        expect.stringMatching(/^docs\/broken\.md:14 \(esm\): TS2322 Type 'number' is not assignable to type 'string'/),
      ]);
    });
  });
});
