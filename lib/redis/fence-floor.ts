import { slotOf } from './driver/slot.js';

/** Redis Cluster hash slots. */
const SLOTS = 16_384;

/** For each slot, a short hash tag (base 36 of the number stored) whose slot it is; built on first use. */
let tagNumbers: Int32Array | undefined;

/**
 * The hash tag of `slot`: a short string `t` such that `{t}` hashes to `slot`. The table is found once per process by
 * trying 0, 1, 2, … in base 36 until every slot has one (about 170,000 CRC16s of 1–4 characters, a few milliseconds).
 */
export function slotTag(slot: number): string {
  if (!tagNumbers) {
    const table = new Int32Array(SLOTS).fill(-1);
    let left = SLOTS;
    for (let n = 0; left > 0; n++) {
      const s = slotOf(`{${n.toString(36)}}`);
      if (table[s] === -1) {
        table[s] = n;
        left--;
      }
    }
    tagNumbers = table;
  }
  return tagNumbers[slot].toString(36);
}

/**
 * The fence floor of the lock whose state is `state` (the full name the server sees is `clientPrefix + state`,
 * `clientPrefix` being an ioredis client's own `keyPrefix`): `<prefix>fence:{<tag>}`, one string per hash slot that
 * holds the largest fencing token any key of that slot was granted. It only rises (every grant writes a token past
 * both it and the key's own last token), never expires, and lives in the lock's slot, so a script that declares it in
 * `KEYS` stays single-slot on a Cluster and on managed services. At most 16,384 of them, whatever the number of
 * distinct keys ever locked. Should a client prefix carry its own hash tag in a way that puts the two in different
 * slots, the floor is kept per key instead (`<state>:fence`, without expiry).
 */
export function fenceFloorKey(prefix: string, state: string, clientPrefix = ''): string {
  const slot = slotOf(clientPrefix + state);
  const floor = `${prefix}fence:{${slotTag(slot)}}`;
  return slotOf(clientPrefix + floor) === slot ? floor : `${state}:fence`;
}
