import { describe, expect, it } from '@jest/globals';
import { classifyRedisError, redisErrorCode } from './redis-failures.js';

// The replies below are the servers' own, captured from Redis 7.0.15, Redis 7.4.1 and Valkey 8.0.1 (user `locks`,
// a script whose line 2 calls PUBLISH): each version words them its own way, and the classification is the same.
const SHA = '1e5269e5b9993a8b18aec994b4d3e56b18124a15';
const SCRIPT = `redis.call('SET', KEYS[1], 'x')\nredis.call('PUBLISH', KEYS[1], 'x')`;
const scripts = (sha: string) => (sha === SHA ? SCRIPT : undefined);
const PREFIX = 'locks:';

function reply(message: string): Error {
  const err = new Error(message);
  err.name = 'ReplyError';
  return err;
}

const classify = (message: string) => classifyRedisError(reply(message), scripts, PREFIX);

describe('classifyRedisError', () => {
  it.each([
    [
      '7.0',
      `ERR The user executing the script can't run this command or subcommand script: ${SHA}, on @user_script:2.`,
    ],
    [
      '7.4 and Valkey 8',
      `ERR ACL failure in script: User locks has no permissions to run the 'publish' command script: ${SHA}, on @user_script:2.`,
    ],
  ])('a command a script calls and the user may not run (Redis %s): permission denied, naming it', (_, message) => {
    expect(classify(message)).toMatchObject({ reason: 'permission-denied', missing: 'PUBLISH' });
    expect(classify(message).detail).toContain("may not run PUBLISH (called by the library's Lua script)");
  });

  it.each([
    [
      '7.0',
      `ERR The user executing the script can't publish to the channel mentioned in the command script: ${SHA}, on @user_script:2.`,
    ],
    [
      '7.4 and Valkey 8',
      `ERR ACL failure in script: No permissions to access a channel script: ${SHA}, on @user_script:2.`,
    ],
  ])('a channel a script publishes to (Redis %s): permission denied, naming the channels', (_, message) => {
    expect(classify(message)).toMatchObject({ reason: 'permission-denied', missing: `channels &${PREFIX}*` });
  });

  it.each([
    [
      '7.0',
      `ERR The user executing the script can't access at least one of the keys mentioned in the command arguments script: ${SHA}, on @user_script:1.`,
    ],
    [
      '7.4 and Valkey 8',
      `ERR ACL failure in script: No permissions to access a key script: ${SHA}, on @user_script:1.`,
    ],
    ['7.0, a declared key', 'NOPERM this user has no permissions to access one of the keys used as arguments'],
    ['7.4 and Valkey 8, a declared key', 'NOPERM No permissions to access a key'],
  ])('a key (Redis %s): permission denied, naming the keys', (_, message) => {
    expect(classify(message)).toMatchObject({ reason: 'permission-denied', missing: `keys ~${PREFIX}*` });
  });

  it.each([
    ['7.0', "NOPERM this user has no permissions to run the 'publish' command"],
    ['7.4 and Valkey 8', "NOPERM User locks has no permissions to run the 'publish' command"],
  ])('a command sent directly (Redis %s): permission denied, naming it', (_, message) => {
    expect(classify(message)).toMatchObject({ reason: 'permission-denied', missing: 'PUBLISH' });
  });

  it.each([
    ['7.0', 'NOPERM this user has no permissions to access one of the channels used as arguments'],
    ['7.4 and Valkey 8', 'NOPERM No permissions to access a channel'],
  ])('a channel subscribed to (Redis %s): permission denied, naming the channels', (_, message) => {
    expect(classify(message)).toMatchObject({ reason: 'permission-denied', missing: `channels &${PREFIX}*` });
  });

  it('a NOPERM in words no version uses yet is still a denial', () => {
    expect(classify('NOPERM something new')).toMatchObject({
      reason: 'permission-denied',
      missing: 'a command used by the lock scripts',
    });
  });

  it.each([
    'NOSCRIPT No matching script. Please use EVAL.',
    'NOSCRIPT No matching script.',
    `WRONGTYPE Operation against a key holding the wrong kind of value script: ${SHA}, on @user_script:1.`,
    `ERR user_script:1: attempt to perform arithmetic on a nil value script: ${SHA}, on @user_script:1.`,
    "ERR unknown command 'NOSUCHCMD', with args beginning with: ",
    "READONLY You can't write against a read only replica.",
    "OOM command not allowed when used memory > 'maxmemory'.",
  ])('any other error reply is refused: %s', (message) => {
    expect(classify(message)).toMatchObject({ reason: 'refused' });
  });

  it("leaves out the arguments Redis quotes back (a script's source sent by EVAL)", () => {
    const failure = classify(
      "ERR unknown command 'EVAL', with args beginning with: '-- acquire\nlocal state = KEYS[1]' '1' 'lock:{k}' ",
    );
    expect(failure).toMatchObject({ reason: 'refused' });
    expect(failure.detail).toBe("Redis refused the command: ERR unknown command 'EVAL'");
  });

  it('a failure that is no reply is unreachable', () => {
    expect(classifyRedisError(new Error('connect ECONNREFUSED 127.0.0.1:6379'), scripts, PREFIX).reason).toBe(
      'unreachable',
    );
    expect(classifyRedisError(new Error('Connection is closed.'), scripts, PREFIX).reason).toBe('unreachable');
  });
});

describe('redisErrorCode', () => {
  it.each([
    ['NOSCRIPT No matching script. Please use EVAL.', 'NOSCRIPT'], // Redis 7.0 and 7.4
    ['NOSCRIPT No matching script.', 'NOSCRIPT'], // Valkey 8
    ['NOPERM No permissions to access a key', 'NOPERM'],
    [`ERR ACL failure in script: No permissions to access a key script: ${SHA}, on @user_script:1.`, 'ERR'],
    ['MOVED 3999 127.0.0.1:7001', 'MOVED'],
  ])('%s: %s', (message, code) => {
    expect(redisErrorCode(reply(message))).toBe(code);
  });

  it('is undefined for an error that is no reply', () => {
    expect(redisErrorCode(new Error('connect ECONNREFUSED 127.0.0.1:6379'))).toBeUndefined();
  });
});
