import { describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { LockAcquireTimeoutError, LockError, LockKeyError } from './index.js';

// Two separately loaded copies of the error classes, as in a process that loads both builds of the package:
// the CommonJS build through require() and the ESM build through import(). `npm test` builds them first.
const dist = fileURLToPath(new URL('../../dist/', import.meta.url));
const cjsEntry = `${dist}cjs/errors/index.js`;
const esmEntry = `${dist}esm/errors/index.js`;
type ErrorsModule = typeof import('./index.js');

async function loadBuilds(): Promise<{ cjs: ErrorsModule; esm: ErrorsModule }> {
  for (const entry of [cjsEntry, esmEntry]) {
    if (!existsSync(entry)) throw new Error(`${entry} is missing: run \`npm run build\` first (npm test does)`);
  }
  const cjs = createRequire(import.meta.url)(cjsEntry) as ErrorsModule;
  const esm = (await import(esmEntry)) as ErrorsModule;
  return { cjs, esm };
}

const timeout = (m: ErrorsModule) =>
  new m.LockAcquireTimeoutError({ key: 'k', keys: ['k'], mode: 'write', waitedMs: 5, waitTimeoutMs: 5 });

describe('LockError instanceof across copies of the package', () => {
  it('loads two distinct copies of the classes', async () => {
    const { cjs, esm } = await loadBuilds();
    expect(cjs.LockAcquireTimeoutError).not.toBe(esm.LockAcquireTimeoutError);
    expect(Object.getPrototypeOf(timeout(cjs))).not.toBe(esm.LockAcquireTimeoutError.prototype);
  });

  it("recognises an error of one copy as an instance of the other copy's class and base class", async () => {
    const { cjs, esm } = await loadBuilds();
    for (const [from, to] of [
      [cjs, esm],
      [esm, cjs],
    ] as const) {
      const err: unknown = timeout(from);
      expect(err instanceof to.LockAcquireTimeoutError).toBe(true);
      expect(err instanceof to.LockError).toBe(true);
      expect(err instanceof Error).toBe(true);
    }
    // The copy this spec compiled from source is a third one.
    expect(timeout(cjs)).toBeInstanceOf(LockAcquireTimeoutError);
    expect(timeout(esm)).toBeInstanceOf(LockError);
  });

  it('does not confuse an error with another class of the other copy', async () => {
    const { cjs, esm } = await loadBuilds();
    const keyError: unknown = new cjs.LockKeyError('bad key', 42);
    expect(keyError instanceof esm.LockKeyError).toBe(true);
    expect(keyError instanceof esm.LockAcquireTimeoutError).toBe(false);
    expect(timeout(esm) instanceof cjs.LockKeyError).toBe(false);
    expect(new cjs.LockError('base only') instanceof esm.LockAcquireTimeoutError).toBe(false);
  });

  it('needs the brand: a look-alike class of the same name is not an instance', () => {
    // A class that is also called LockAcquireTimeoutError, from somewhere else.
    const { LockAcquireTimeoutError: LookAlike } = { LockAcquireTimeoutError: class extends Error {} };
    expect(LookAlike.name).toBe('LockAcquireTimeoutError');
    const lookAlike: unknown = new LookAlike('not ours');
    expect(lookAlike instanceof LockAcquireTimeoutError).toBe(false);
    expect(lookAlike instanceof LockError).toBe(false);
    const named = Object.assign(new Error('named'), { name: 'LockError' });
    expect(named instanceof LockError).toBe(false);
    for (const value of [null, undefined, 'LockError', 42, {}, Object.create(null)]) {
      expect((value as unknown) instanceof LockError).toBe(false);
    }
  });

  it('keeps user subclasses working: theirs are LockErrors of every copy, and a base error is not theirs', async () => {
    const { cjs } = await loadBuilds();
    class InventoryLockError extends LockError {}
    const mine: unknown = new InventoryLockError('mine', { key: 'sku:1' });
    expect(mine instanceof InventoryLockError).toBe(true);
    expect(mine instanceof cjs.LockError).toBe(true);
    expect(mine instanceof cjs.LockKeyError).toBe(false);
    expect((new cjs.LockError('theirs') as unknown) instanceof InventoryLockError).toBe(false);
  });

  it('keeps the brand out of enumerable and JSON output', () => {
    const err = new LockKeyError('bad key', 42, 'k');
    expect(Object.getOwnPropertySymbols(err)).toEqual([]);
    expect(JSON.parse(JSON.stringify(err))).toEqual({ name: 'LockKeyError', key: 'k', value: 42 });
  });
});
