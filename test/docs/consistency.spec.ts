import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { projectDocs } from './markdown.js';

/** Text the README repeats from a guide must say the same as the guide. */
describe('README and guides agree', () => {
  const docs = new Map(projectDocs().map((d) => [d.path, d.text]));
  const aclRules = (path: string) =>
    docs
      .get(path)!
      .split('\n')
      .filter((line) => line.startsWith('ACL SETUSER '));

  it('the ACL rule for a standalone Redis (the README’s is the one test/faults checks against a real Redis)', () => {
    const [readme] = aclRules('README.md');
    expect(readme).toBeDefined();
    expect(aclRules('docs/failure-modes.md')).toContain(readme);
  });
});

/** The ACL rules must name every command the library's Lua scripts call (scripts run with the caller's rights). */
describe('ACL rules cover the scripts', () => {
  const docs = new Map(projectDocs().map((d) => [d.path, d.text]));
  const scriptCommands = (): string[] => {
    const dir = new URL('../../lib/redis/scripts/', import.meta.url);
    const called = new Set<string>();
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts') && !f.endsWith('.spec.ts'))) {
      for (const match of readFileSync(new URL(file, dir), 'utf8').matchAll(/redis\.p?call\('([A-Za-z]+)'/g))
        called.add(match[1].toLowerCase());
    }
    return [...called].sort();
  };
  const rights = (line: string) =>
    new Set(
      line
        .split(/\s+/)
        .filter((w) => w.startsWith('+'))
        .map((w) => w.slice(1).toLowerCase()),
    );

  it('finds the scripts’ commands', () => {
    expect(scriptCommands()).toEqual(expect.arrayContaining(['hset', 'hsetnx', 'zadd', 'publish', 'spublish', 'time']));
  });

  it.each([
    ['README.md', 'publish'],
    ['docs/failure-modes.md', 'publish'],
    ['docs/failure-modes.md', 'spublish'],
    ['docs/board.md', 'publish'],
  ])('%s: the rule with +%s names every command', (path, publish) => {
    const rules = docs
      .get(path)!
      .split('\n')
      .filter((line) => line.startsWith('ACL SETUSER locks ') && rights(line).has(publish));
    expect(rules.length).toBeGreaterThan(0);
    const other = publish === 'publish' ? 'spublish' : 'publish';
    for (const rule of rules) {
      const missing = scriptCommands().filter((command) => command !== other && !rights(rule).has(command));
      expect({ rule: rule.slice(0, 40), missing }).toEqual({ rule: rule.slice(0, 40), missing: [] });
    }
  });
});

/** The README is a front page a newcomer finishes; the detail lives in the guides. */
describe('README stays a front page', () => {
  const readme = () => new Map(projectDocs().map((d) => [d.path, d.text])).get('README.md')!;

  it('is at most 450 lines', () => {
    expect(readme().split('\n').length).toBeLessThanOrEqual(450);
  });

  it('links the one list of guides, docs/README.md, which lists every guide in docs/', () => {
    const guides = readdirSync(new URL('../../docs/', import.meta.url)).filter(
      (f) => f.endsWith('.md') && f !== 'README.md',
    );
    const list = new Map(projectDocs().map((d) => [d.path, d.text])).get('docs/README.md')!;
    expect(readme().slice(readme().indexOf('## Guides'))).toContain('(docs/README.md)');
    expect(guides.filter((g) => !list.includes(`(${g})`))).toEqual([]);
  });
});
