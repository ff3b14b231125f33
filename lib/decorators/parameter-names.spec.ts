import { describe, expect, it } from '@jest/globals';
import { transformSync } from '@swc/core';
import ts from 'typescript';
import { parameterNames } from './parameter-names.js';

type AnyFn = (...args: never[]) => unknown;

/**
 * Real class methods, compiled by SWC like the rest of this spec (see jest.config.js). Each returns its
 * parameters so that `noUnusedParameters` is satisfied.
 */
class Sample {
  none() {
    return [];
  }

  plain(id: string, dto: object, page: number) {
    return [id, dto, page];
  }

  defaults(page = 1, size: number = 20, sort = 'asc') {
    return [page, size, sort];
  }

  objectDefault(filter = { a: 1, b: [1, 2], c: { d: 'e' } }, next = 0) {
    return [filter, next];
  }

  callDefault(at = Math.max(1, 2), next = 0) {
    return [at, next];
  }

  arrowDefault(map = (x: number, y: number) => x + y, next = 0) {
    return [map, next];
  }

  nestedArrowDefault(pick = (o: { a: number }) => ({ a: o.a, b: [o.a] }), next = 0) {
    return [pick, next];
  }

  rest(id: string, ...others: unknown[]) {
    return [id, others];
  }

  destructured({ id }: { id: string }, [first]: string[], page: number) {
    return [id, first, page];
  }

  destructuredWithDefault({ id, name }: { id: string; name: string } = { id: 'a', name: 'b' }, page = 1) {
    return [id, name, page];
  }

  commented(id: string, /* dto, page, ( */ dto: object) {
    return [id, dto];
  }

  async asyncMethod(id: string, dto: object) {
    return [id, dto];
  }

  *generator(id: string) {
    yield id;
  }

  async *asyncGenerator(id: string) {
    yield id;
  }

  static staticMethod(id: string, page: number) {
    return [id, page];
  }

  ['computed'](id: string) {
    return [id];
  }

  $dollar_names($id: string, _page: number, camelCase2: number) {
    return [$id, _page, camelCase2];
  }
}

describe('parameterNames of class methods (compiled by SWC)', () => {
  const p = Sample.prototype;
  it.each<[string, AnyFn, (string | null)[]]>([
    ['no parameters', p.none, []],
    ['plain parameters', p.plain, ['id', 'dto', 'page']],
    ['simple defaults', p.defaults, ['page', 'size', 'sort']],
    ['an object default with commas and brackets', p.objectDefault, ['filter', 'next']],
    ['a default calling a function with two arguments', p.callDefault, ['at', 'next']],
    ['an arrow function default with two parameters', p.arrowDefault, ['map', 'next']],
    ['an arrow function default returning an object', p.nestedArrowDefault, ['pick', 'next']],
    ['a rest parameter', p.rest, ['id', 'others']],
    ['destructured parameters (unnamed)', p.destructured, [null, null, 'page']],
    ['a destructured parameter with a default', p.destructuredWithDefault, [null, 'page']],
    ['a block comment inside the list', p.commented, ['id', 'dto']],
    ['an async method', p.asyncMethod, ['id', 'dto']],
    ['a generator method', p.generator, ['id']],
    ['an async generator method', p.asyncGenerator, ['id']],
    ['a static method', Sample.staticMethod, ['id', 'page']],
    ['a computed method name', p.computed, ['id']],
    ['names with $ and _ and digits', p.$dollar_names, ['$id', '_page', 'camelCase2']],
  ])('%s', (_name, fn, expected) => {
    expect(parameterNames(fn)).toEqual(expected);
  });

  it('sees the comment this spec relies on (SWC keeps block comments)', () => {
    expect(String(p.commented)).toContain('/* dto, page, ( */');
  });
});

describe('parameterNames of functions and arrows', () => {
  it.each<[string, AnyFn, (string | null)[]]>([
    [
      'a function expression',
      function (a: number, b: number) {
        return a + b;
      },
      ['a', 'b'],
    ],
    ['an arrow function', (a: number, b: number) => a + b, ['a', 'b']],
    ['an async arrow function', async (a: number, b: number) => a + b, ['a', 'b']],
    ['an arrow with a rest parameter', (...all: number[]) => all, ['all']],
    ['an arrow with destructuring', ({ a }: { a: number }, b: number) => a + b, [null, 'b']],
    // SWC drops a trailing comma, so this one is built at run time.
    ['a trailing comma', new Function('a, b,', 'return a + b') as AnyFn, ['a', 'b']],
    [
      'a line comment holding a comma and a parenthesis',
      new Function('a, // b, (c\n d', 'return a + d') as AnyFn,
      ['a', 'd'],
    ],
  ])('%s', (_name, fn, expected) => {
    expect(parameterNames(fn)).toEqual(expected);
  });
});

/** A decorated service, as an application would write it: method and parameter decorators, defaults, comments. */
const SERVICE_SOURCE = `
function Locked(): MethodDecorator { return () => undefined; }
function Body(): ParameterDecorator { return () => undefined; }
class Svc {
  @Locked()
  async update(@Body() id: string, /* old, */ dto: { a: number } = { a: 1, b: [2, 3] } as never, // note (x, y
    ...rest: unknown[]): Promise<unknown> { return [id, dto, rest]; }
  @Locked()
  find({ id }: { id: string }, page = Math.max(1, 2), sort = (a: number, b: number) => a - b) { return [id, page, sort]; }
}
`;
const EXPECTED = { update: ['id', 'dto', 'rest'], find: [null, 'page', 'sort'] };

function load(js: string): { update: AnyFn; find: AnyFn } {
  const Svc = new Function(`${js}\nreturn Svc;`)() as { prototype: { update: AnyFn; find: AnyFn } };
  return Svc.prototype;
}

describe('parameterNames of methods compiled by the TypeScript compiler', () => {
  it.each([
    ['ES2017', ts.ScriptTarget.ES2017],
    ['ES2020', ts.ScriptTarget.ES2020],
    ['ES2022', ts.ScriptTarget.ES2022],
    ['ESNext', ts.ScriptTarget.ESNext],
  ])('target %s, legacy decorators with metadata', (_name, target) => {
    const { outputText } = ts.transpileModule(SERVICE_SOURCE, {
      compilerOptions: { target, experimentalDecorators: true, emitDecoratorMetadata: true },
    });
    // tsc keeps line comments: the "(x, y" in one must not be read as code.
    expect(outputText).toContain('// note (x, y');
    const svc = load(outputText);
    expect(parameterNames(svc.update)).toEqual(EXPECTED.update);
    expect(parameterNames(svc.find)).toEqual(EXPECTED.find);
  });
});

describe('parameterNames of methods compiled by SWC', () => {
  it.each(['es2017', 'es2020', 'es2022'] as const)('target %s, legacy decorators with metadata', (target) => {
    const { code } = transformSync(SERVICE_SOURCE, {
      jsc: {
        target,
        parser: { syntax: 'typescript', decorators: true },
        transform: { legacyDecorator: true, decoratorMetadata: true },
        keepClassNames: true,
      },
    });
    const svc = load(code);
    expect(parameterNames(svc.update)).toEqual(EXPECTED.update);
    expect(parameterNames(svc.find)).toEqual(EXPECTED.find);
  });
});

/*
 * Defaults holding `,`, `)` or `//` inside literals must not shift or drop names: read naively,
 * `(region = 'eu,us', id, tenant)` gave ['region', null, 'id', 'tenant'], so '<id>' locked the tenant.
 */
class StringDefaults {
  comma(region = 'eu,us', id: string, tenant: string) {
    return [region, id, tenant];
  }

  paren(sep = ')', id: string) {
    return [sep, id];
  }

  url(base = 'http://x', id: string) {
    return [base, id];
  }

  template(t = `a,${String(1)}`, id: string) {
    return [t, id];
  }

  regex(pattern = /[,)]\//g, id: string) {
    return [pattern, id];
  }

  nestedTemplate(t = `x${`)`}`, id: string) {
    return [t, id];
  }
}

describe('parameterNames with literals in defaults', () => {
  const p = StringDefaults.prototype;
  it.each<[string, AnyFn, (string | null)[]]>([
    ['a comma in a string default', p.comma, ['region', 'id', 'tenant']],
    ['a parenthesis in a string default', p.paren, ['sep', 'id']],
    ['"//" in a string default', p.url, ['base', 'id']],
    ['a comma in a template literal default', p.template, ['t', 'id']],
    ['a regular expression default holding , ) and /', p.regex, ['pattern', 'id']],
    ['a nested template holding )', p.nestedTemplate, ['t', 'id']],
    ['a block comment holding a comma', new Function('a /* x, y */, b', 'return a + b') as AnyFn, ['a', 'b']],
    ['an arrow function without parentheses', ((id: string) => id) as AnyFn, ['id']],
    ['an async arrow function without parentheses', new Function('return async id => id')() as AnyFn, ['id']],
  ])('%s', (_name, fn, expected) => {
    expect(parameterNames(fn)).toEqual(expected);
  });
});
