import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { defaultAppName } from './app-name.js';

describe('defaultAppName', () => {
  const root = mkdtempSync(join(tmpdir(), 'app-name-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('is npm_package_name when npm started the process', () => {
    expect(defaultAppName({ npm_package_name: 'from-npm' }, join(root, 'main.js'))).toBe('from-npm');
  });

  it('is the name of the nearest package.json above the entry script (node dist/main.js)', () => {
    mkdirSync(join(root, 'orders', 'dist', 'src'), { recursive: true });
    writeFileSync(join(root, 'orders', 'package.json'), JSON.stringify({ name: 'orders-service' }));
    expect(defaultAppName({}, join(root, 'orders', 'dist', 'src', 'main.js'))).toBe('orders-service');
  });

  it('is the process title when no package.json names it', () => {
    mkdirSync(join(root, 'bare'), { recursive: true });
    writeFileSync(join(root, 'bare', 'package.json'), JSON.stringify({ private: true }));
    expect(defaultAppName({}, join(root, 'bare', 'main.js'))).toBe(process.title);
    expect(defaultAppName({}, null)).toBe(process.title);
  });
});
