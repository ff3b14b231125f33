import { describe, expect, it } from '@jest/globals';
import { projectDocs } from './markdown.js';

/** Text the README repeats from a guide must say the same as the guide. */
describe('README and guides agree', () => {
  const docs = new Map(projectDocs().map((d) => [d.path, d.text]));
  const aclRules = (path: string) => docs.get(path)!.split('\n').filter((line) => line.startsWith('ACL SETUSER '));

  it('the ACL rule for a standalone Redis (the README’s is the one test/faults checks against a real Redis)', () => {
    const [readme] = aclRules('README.md');
    expect(readme).toBeDefined();
    expect(aclRules('docs/failure-modes.md')).toContain(readme);
  });
});
