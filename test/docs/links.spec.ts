import { describe, expect, it } from '@jest/globals';
import { anchors, linkedDocs, slug } from './markdown.js';
import { brokenLinks } from './links.js';

describe('documentation links', () => {
  it('every link of README.md, docs/*.md, CHANGELOG.md and bench/README.md names a file and a heading that exist', () => {
    expect(brokenLinks(linkedDocs())).toEqual([]);
  });

  // The checker itself: a link to a missing file or heading must fail the test.
  it('reports a missing file, a missing heading and a missing heading of the same document', () => {
    const docs = [
      {
        path: 'README.md',
        text: '# Title\n\n## Quick start\n\nSee [guide](docs/guide.md#options), [gone](docs/gone.md), [here](#quick-start), [nowhere](#quick-stat).\nA [link over\ntwo lines](#quick-strat) and `[code](#not-a-link)`.\n',
      },
      {
        path: 'docs/guide.md',
        text: '# Guide\n\n## Option list\n\nBack to [the start](../README.md#quick-start) or [the package](../package.json).\n\n```md\n[not a link](missing.md)\n```\n',
      },
    ];
    expect(brokenLinks(docs)).toEqual([
      'README.md:5: docs/guide.md#options: no heading "#options" in docs/guide.md',
      'README.md:5: docs/gone.md: no such file (docs/gone.md)',
      'README.md:5: #quick-stat: no heading "#quick-stat" in README.md',
      'README.md:7: #quick-strat: no heading "#quick-strat" in README.md',
    ]);
  });

  it('derives anchors as GitHub does', () => {
    expect(slug('Reentrancy and the `Promise.all` trap')).toBe('reentrancy-and-the-promiseall-trap');
    expect(slug('Replica acknowledgement (`waitForReplicas`)')).toBe('replica-acknowledgement-waitforreplicas');
    expect(slug('Fencing: the store must check reads too')).toBe('fencing-the-store-must-check-reads-too');
    expect(slug("With `@nestjs/schedule`'s own options")).toBe('with-nestjsschedules-own-options');
    expect([...anchors('# A\n## Options\n### Options\n```\n# not a heading\n```\n<a id="custom"></a>\n')]).toEqual([
      'a',
      'options',
      'options-1',
      'custom',
    ]);
  });
});
