// ESM loader hooks that let child Node processes run the TypeScript sources directly: `.ts` files are
// compiled on the fly by SWC with the very options Jest uses (jest.config.js), and relative `./x.js`
// imports from a `.ts` file resolve to `./x.ts`, as they do under Jest's moduleNameMapper.
// Registered by register-ts.mjs: `node --import ./test/support/register-ts.mjs test/fixtures/worker.ts`.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath, URL } from 'node:url';
import swc from '@swc/core';
import jestConfig from '../../jest.config.js';

const [, jestSwcOptions] = jestConfig.transform['^.+\\.ts$'];

export async function resolve(specifier, context, nextResolve) {
  const parent = context.parentURL;
  if (parent?.endsWith('.ts') && /^\.{1,2}\//.test(specifier) && specifier.endsWith('.js')) {
    const asTs = new URL(`${specifier.slice(0, -3)}.ts`, parent);
    if (existsSync(fileURLToPath(asTs))) return { url: asTs.href, format: 'module', shortCircuit: true };
  }
  return nextResolve(specifier, context);
}

export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return nextLoad(url, context);
  const filename = fileURLToPath(url);
  const source = await readFile(filename, 'utf8');
  const { code } = await swc.transform(source, { ...jestSwcOptions, filename, swcrc: false, configFile: false });
  return { format: 'module', source: code, shortCircuit: true };
}
