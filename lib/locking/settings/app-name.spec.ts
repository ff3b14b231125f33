import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultAppName } from './app-name.js';

describe('defaultAppName', () => {
  let root: string;
  /**
   * `<root>/app`: package.json `billing-api`, compiled to dist/ (which has a nameless package.json, as a dual build's).
   */
  let app: string;
  const file = (path: string, text = '') => {
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, text);
    return path;
  };
  const json = (path: string, value: unknown) => file(path, JSON.stringify(value));

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'app-name-'));
    app = join(root, 'app');
    json(join(app, 'package.json'), { name: 'billing-api', version: '1.0.0' });
    json(join(app, 'dist/package.json'), { type: 'commonjs' });
    file(join(app, 'dist/main.js'));
    json(join(app, 'node_modules/@nestjs/cli/package.json'), { name: '@nestjs/cli' });
    file(join(app, 'node_modules/@nestjs/cli/bin/nest.js'));
    json(join(app, 'node_modules/.pnpm/jest@30/node_modules/jest/package.json'), { name: 'jest' });
    file(join(app, 'node_modules/.pnpm/jest@30/node_modules/jest/bin/jest.js'));
    mkdirSync(join(root, 'bin'));
    symlinkSync(join(app, 'dist/main.js'), join(root, 'bin/billing'));
    json(join(root, 'broken/package.json'), { name: 'outer' });
    file(join(root, 'broken/inner/package.json'), '{ not json');
    file(join(root, 'broken/inner/main.js'));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  const sources = (entry: string | undefined, env: Record<string, string> = {}) => ({
    env,
    entry,
    title: 'node-title',
  });

  it('is npm_package_name when npm started the process', () => {
    expect(defaultAppName(sources(join(app, 'dist/main.js'), { npm_package_name: 'from-npm' }))).toBe('from-npm');
  });

  it('is the name of the nearest package.json that has one, above the entry script (`node dist/main.js`)', () => {
    expect(defaultAppName(sources(join(app, 'dist/main.js')))).toBe('billing-api');
    expect(defaultAppName(sources(join(app, 'dist/main.js'), { npm_package_name: '' }))).toBe('billing-api');
  });

  it('follows a symlinked entry script to the app it belongs to', () => {
    expect(defaultAppName(sources(join(root, 'bin/billing')))).toBe('billing-api');
  });

  it('skips a tool’s package when the entry script is inside node_modules (`nest start`, a test runner)', () => {
    expect(defaultAppName(sources(join(app, 'node_modules/@nestjs/cli/bin/nest.js')))).toBe('billing-api');
    expect(defaultAppName(sources(join(app, 'node_modules/.pnpm/jest@30/node_modules/jest/bin/jest.js')))).toBe(
      'billing-api',
    );
  });

  it('skips a package.json it cannot parse', () => {
    expect(defaultAppName(sources(join(root, 'broken/inner/main.js')))).toBe('outer');
  });

  it('is the process title without an entry script, or when the entry script is not a file', () => {
    expect(defaultAppName(sources(undefined))).toBe('node-title');
    expect(defaultAppName(sources(join(root, 'missing/main.js')))).toBe('node-title');
  });

  it('reads the process’s own environment, entry script and title by default', () => {
    expect(defaultAppName()).toBe(defaultAppName({ env: process.env, entry: process.argv[1], title: process.title }));
  });
});
