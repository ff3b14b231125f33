import { afterEach, describe, expect, it } from '@jest/globals';
import { FENCED_READ, FENCED_WRITE } from '../../sample-app/articles/articles.service.js';
import { LockTestKit } from '../support/lock-test-kit.js';
import { uniquePrefix } from '../support/redis.js';

/**
 * The sample's fenced store (docs/locks.md, Fencing tokens): a smaller token is refused, and so is an equal token from
 * another holder, which is what a failover that lost the last grant can hand out (docs/topologies.md).
 */
describe('the fenced store refuses stale and duplicate tokens', () => {
  const kit = new LockTestKit();
  afterEach(() => kit.closeAll());

  it('accepts a greater token, and the same token from the same holder; refuses a smaller one, and an equal one from another holder', async () => {
    const redis = kit.redis();
    const base = uniquePrefix('fenced-store');
    kit.add(async () => void (await redis.del(`${base}v`, `${base}fence`)));
    const write = async (token: number, holder: string, value: string) =>
      ((await redis.eval(FENCED_WRITE, 2, `${base}v`, `${base}fence`, token, holder, 'SET', value)) as number[])[0];
    const read = async (token: number, holder: string) =>
      ((await redis.eval(FENCED_READ, 2, `${base}v`, `${base}fence`, token, holder, 'GET')) as unknown[])[0];

    expect(await write(10, 'holder-a', 'a1')).toBe(1);
    expect(await write(10, 'holder-a', 'a2')).toBe(1);
    expect(await read(10, 'holder-a')).toBe(1);
    // Same token, another holder: the duplicate a lost grant can produce.
    expect(await write(10, 'holder-b', 'b1')).toBe(0);
    expect(await read(10, 'holder-b')).toBe(0);
    expect(await write(9, 'holder-c', 'c1')).toBe(0);
    expect(await redis.get(`${base}v`)).toBe('a2');
    expect(await read(11, 'holder-d')).toBe(1);
    expect(await write(10, 'holder-a', 'a3')).toBe(0);
    expect(await write(11, 'holder-d', 'd1')).toBe(1);
    expect(await redis.get(`${base}v`)).toBe('d1');
  });
});
