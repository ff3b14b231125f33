import { describe, expect, it } from '@jest/globals';
import type { WakeUp } from '../../store/lock-store.js';
import type { LockMode } from '../../types/lock.types.js';
import { wakes } from './waiting.js';

describe('wakes', () => {
  it.each<[string, WakeUp, string, LockMode, boolean]>([
    // Every waiting reader, whatever its id; never a writer.
    ['readers wakes a reader', 'readers', 'i.1', 'read', true],
    ['readers wakes a reader of any id', 'readers', 'other.9', 'read', true],
    ['readers does not wake a writer', 'readers', 'i.1', 'write', false],
    ['readers does not wake a writer of any id', 'readers', 'other.9', 'write', false],
    // One named waiter, in either mode.
    ['a named wake-up wakes that writer', { waiterId: 'i.1' }, 'i.1', 'write', true],
    ['a named wake-up wakes that reader', { waiterId: 'i.1' }, 'i.1', 'read', true],
    ['a named wake-up does not wake another writer', { waiterId: 'i.1' }, 'i.2', 'write', false],
    ['a named wake-up does not wake another reader', { waiterId: 'i.1' }, 'i.2', 'read', false],
    ['a named wake-up needs the exact id (prefix)', { waiterId: 'i.1' }, 'i.10', 'write', false],
    ['a named wake-up needs the exact id (case)', { waiterId: 'ab.1' }, 'AB.1', 'write', false],
    ['a wake-up for id "readers" is a named one', { waiterId: 'readers' }, 'x.1', 'read', false],
  ])('%s', (_name, wakeUp, waiterId, mode, expected) => {
    expect(wakes(wakeUp, waiterId, mode)).toBe(expected);
  });
});
