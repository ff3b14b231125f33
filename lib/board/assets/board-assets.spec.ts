import { describe, expect, it } from '@jest/globals';
import { Linter } from 'eslint';
import { BOARD_HTML } from './board-page.js';
import { BOARD_JS } from './board-script.js';
import { BOARD_CSS } from './board-style.js';

// The page's script is plain browser JavaScript kept in TypeScript strings (no build step, one source for both
// builds): lint it as what the browser runs.
const BROWSER_GLOBALS = [
  'document',
  'location',
  'history',
  'fetch',
  'AbortController',
  'URL',
  'URLSearchParams',
  'setTimeout',
  'clearTimeout',
  'JSON',
  'Object',
  'Math',
  'Date',
  'String',
  'isFinite',
  'isNaN',
];

describe('board assets', () => {
  it('board.js is valid browser JavaScript with no undefined or unused names', () => {
    const linter = new Linter({ configType: 'flat' });
    const messages = linter.verify(BOARD_JS, [
      {
        languageOptions: {
          ecmaVersion: 2020,
          sourceType: 'script',
          globals: Object.fromEntries(BROWSER_GLOBALS.map((g) => [g, 'readonly'])),
        },
        rules: {
          'no-undef': 'error',
          'no-unused-vars': 'error',
          'no-redeclare': 'error',
          strict: ['error', 'global'],
          'no-restricted-properties': [
            'error',
            { property: 'innerHTML', message: 'values are user data: append text nodes' },
            { property: 'outerHTML', message: 'values are user data: append text nodes' },
            { property: 'insertAdjacentHTML', message: 'values are user data: append text nodes' },
            { object: 'document', property: 'write', message: 'values are user data: append text nodes' },
          ],
          'no-eval': 'error',
          'no-implied-eval': 'error',
        },
      },
    ]);
    expect(messages.map((m) => `${m.line}:${m.column} ${m.message}`)).toEqual([]);
  });

  it('the page has no inline script, inline style or absolute URL (strict CSP, proxy prefixes)', () => {
    expect(BOARD_HTML).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(BOARD_HTML).not.toMatch(/\sstyle=|<style/);
    expect(BOARD_HTML).not.toMatch(/\son[a-z]+=/);
    for (const [, url] of BOARD_HTML.matchAll(/(?:src|href)="([^"]*)"/g)) expect(url).not.toMatch(/^(\/|[a-z]+:)/);
    expect(BOARD_JS).not.toMatch(/['"]\/(api|board)/);
    expect(BOARD_CSS).not.toMatch(/url\(|@import/);
  });
});
