import { describe, expect, it } from '@jest/globals';
import { chunks, groupBy, misrouted, refusesCrossSlot } from './node-batches.js';

// The failures of a cross-slot batch, as Redis 7.0 and ioredis word them: a misrouted batch is sent again per slot, a
// refused flag is remembered, anything else fails the round (a node down is not multiplied into one call per slot).
describe('misrouted', () => {
  it.each([
    'MOVED 3999 127.0.0.1:6381',
    'ASK 3999 127.0.0.1:6381',
    'TRYAGAIN Multiple keys request during rehashing of slot',
    'ERR Script attempted to access a non local key in a cluster node script: e19f87f8581c8d21c2dba3e3247d603d5546c398, on @user_script:132.',
    'Too many Cluster redirections. Last error: ReplyError: MOVED 3999 127.0.0.1:6381',
    'Too many Cluster redirections. Last error: ReplyError: TRYAGAIN Multiple keys request during rehashing of slot',
    // Newer Redis versions word each error a script meets inside a Cluster node its own way (keys of a migrating slot).
    "ERR Unable to execute command 'exists' in script because undeclared keys were accessed during rehashing of the slot script: e19f87f8581c8d21c2dba3e3247d603d5546c398, on @user_script:40.",
  ])('%s: sent again per slot', (message) => {
    expect(misrouted(new Error(message))).toBe(true);
  });

  it.each([
    'Too many Cluster redirections. Last error: Error: Connection is closed.',
    'Too many Cluster redirections. Last error: ReplyError: CLUSTERDOWN The cluster is down',
    'connect ECONNREFUSED 127.0.0.1:7000',
    'Connection is closed.',
    'CLUSTERDOWN The cluster is down',
    'ERR Script attempted to execute a command while the cluster is down script: e19f87f8581c8d21c2dba3e3247d603d5546c398, on @user_script:12.',
    'NOPERM this user has no permissions to access one of the keys used as arguments',
    'ERR Script attempted to access a slot not served script: e19f87f8581c8d21c2dba3e3247d603d5546c398, on @user_script:40.',
  ])('%s: fails the round', (message) => {
    expect(misrouted(new Error(message))).toBe(false);
    expect(refusesCrossSlot(new Error(message))).toBe(false);
  });

  it('a refused flag (a proxy, a Redis before 7.0 that cannot read the shebang) is told apart', () => {
    expect(refusesCrossSlot(new Error("CROSSSLOT Keys in request don't hash to the same slot"))).toBe(true);
    expect(
      refusesCrossSlot(
        new Error("ERR Error compiling script (new function): user_script:1: unexpected symbol near '#'"),
      ),
    ).toBe(true);
  });
});

describe('chunks and groupBy', () => {
  it('cut and group in order', () => {
    expect(chunks([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect([...groupBy([1, 2, 3, 4, 5], (n) => n % 2).entries()]).toEqual([
      [1, [1, 3, 5]],
      [0, [2, 4]],
    ]);
  });
});
