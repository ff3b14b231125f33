import { describe, expect, it } from '@jest/globals';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Guides whose ```ts blocks are compiled too (each block a complete module). */
const GUIDES = ['docs/scheduled-jobs.md'];

/** Every ```ts block of the README and the guides, type-checked against the library as `nest-redis-locks` would resolve. */
describe('README examples', () => {
  const readme = [readFileSync(join(root, 'README.md'), 'utf8'), ...GUIDES.map((g) => readFileSync(join(root, g), 'utf8'))].join('\n');
  const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);

  it('has examples', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(5);
  });

  it('compile with the project settings', () => {
    const dir = join(root, 'test', 'readme', '.generated');
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const files = blocks.map((code, i) => {
      const file = join(dir, `example-${i + 1}.ts`);
      // Each block is its own module; fragments that only show a decorator use are wrapped in a class.
      const source = /^\s*@/.test(code) ? `import { Body, Controller, Param, Put } from '@nestjs/common';\nimport { WriteLocked } from 'nest-redis-locks';\ninterface UpdateArticleDto { title: string }\n@Controller('articles')\nexport class Example {\n${code.replace('{ … }', '{ return { id, dto }; }')}}\n` : code;
      writeFileSync(file, source);
      return file;
    });
    const config = ts.readConfigFile(join(root, 'tsconfig.json'), ts.sys.readFile);
    const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, root);
    const program = ts.createProgram(files, {
      ...parsed.options,
      noEmit: true,
      noUnusedLocals: false,
      noUnusedParameters: false,
      paths: {
        'nest-redis-locks': [join(root, 'lib', 'index.ts')],
        'nest-redis-locks/health': [join(root, 'lib', 'health', 'index.ts')],
        'nest-redis-locks/testing': [join(root, 'lib', 'testing', 'index.ts')],
      },
    });
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => {
      const where = d.file ? `${d.file.fileName}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}` : '';
      return `${where} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    });
    rmSync(dir, { recursive: true, force: true });
    expect(diagnostics).toEqual([]);
  }, 60_000);
});
