import { describe, expect, it } from '@jest/globals';
import type { LockHolderInfo } from '../types/lock.types.js';
import type { WakeUp } from '../store/lock-store.js';
import { decodeHolder, decodeWakeUp } from './lock-script-codec.js';

describe('decodeWakeUp', () => {
  it.each<[string, WakeUp]>([
    ['r', 'readers'],
    ['w:inst-1.7', { waiterId: 'inst-1.7' }],
    ['f:inst-1.8', { waiterId: 'inst-1.8' }],
    ['w:a:b:c', { waiterId: 'a:b:c' }],
    ['w:r', { waiterId: 'r' }],
  ])('decodes %p', (message, expected) => {
    expect(decodeWakeUp(message)).toEqual(expected);
  });
});

describe('decodeHolder', () => {
  const SINCE = 1_700_000_000_123;

  it.each<[string, string, Partial<LockHolderInfo>]>([
    [
      'a plain record',
      `2|17|42|${SINCE}|web-1|4242|orders|inst-1:7`,
      { holdCount: 2, fencingToken: 42, host: 'web-1', pid: 4242, app: 'orders', owner: 'inst-1:7' },
    ],
    [
      'an owner id containing |',
      `1|3|9|${SINCE}|web-1|1|orders|a|b||c|`,
      { owner: 'a|b||c|', app: 'orders', host: 'web-1' },
    ],
    ['an empty app name', `1|1|5|${SINCE}|h|77||o:1`, { app: '', owner: 'o:1', pid: 77 }],
    ['an empty owner id', `1|1|5|${SINCE}|h|77|app|`, { app: 'app', owner: '' }],
    [
      'a large hold count and fence',
      `1000|99|9007199254740991|${SINCE}|h|1|a|o`,
      { holdCount: 1000, fencingToken: 9_007_199_254_740_991 },
    ],
  ])('decodes %s', (_name, record, expected) => {
    expect(decodeHolder(record, 'read', 1500)).toMatchObject(expected);
  });

  it('returns every field, with the mode and remaining lease given', () => {
    expect(decodeHolder(`2|17|42|${SINCE}|web-1|4242|orders|inst-1:7`, 'write', 1234)).toEqual({
      mode: 'write',
      owner: 'inst-1:7',
      host: 'web-1',
      pid: 4242,
      app: 'orders',
      holdCount: 2,
      finished: false,
      since: new Date(SINCE),
      remainingLeaseMs: 1234,
      fencingToken: 42,
    });
  });

  it('reads the acquisition time as epoch milliseconds', () => {
    const info = decodeHolder(`1|1|1|${SINCE}|h|1|a|o`, 'read', 0);
    expect(info.since).toBeInstanceOf(Date);
    expect(info.since.getTime()).toBe(SINCE);
  });
});
