import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { OpaqueCodec, type OpaqueDomain } from '../src/core/opaque-codec.js';
import { OpaqueSecret } from '../src/server/opaque/opaque-keys.js';
import { encodeInChunks } from '../src/server/opaque/opaque-tags.js';
import { randomTag } from './support/random-tag.js';

/**
 * Attack on the batch encoders (numbers below 2^53, halves past it, time-paced steps): with the
 * production cipher (a Buffer straight from `cipher.update`, no copy), every domain frond has, and
 * the segment IDs where the double arithmetic is tightest (2^53 − 1, multiples of radix^v ± 1, the
 * capacity, 2^31/2^32 boundaries), each ID must be the bigint reading's, in steps of any size.
 */
const DOMAINS: OpaqueDomain[] = [
  ...Array.from({ length: 44 }, (_, i) => ({ kind: 'bits', bits: 20 + i }) as const),
  ...Array.from({ length: 13 }, (_, i) => ({ kind: 'digits', digits: 6 + i }) as const),
];

function edgeIds(domain: OpaqueDomain, capacity: bigint): number[] {
  const top = capacity > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(capacity);
  const length = domain.kind === 'bits' ? domain.bits : domain.digits;
  const modV = (domain.kind === 'bits' ? 2 : 10) ** (length - Math.floor(length / 2));
  const ids = new Set<number>([1, 2, 3, top, top - 1, top - 2]);
  for (const at of [2 ** 31, 2 ** 32, 1e8, 1e9, 1e14, 2 ** 52, 2 ** 53 - 1])
    for (let d = -2; d <= 2; d++) if (at + d >= 1 && at + d <= top) ids.add(at + d);
  // Bounded: 100 multiples of radix^v, each with its neighbours, and 100 IDs anywhere.
  for (let k = 0; k < 100; k++) {
    const q = Math.floor(Math.random() * (top / modV));
    for (let d = -1; d <= 1; d++) if (q * modV + d >= 1 && q * modV + d <= top) ids.add(q * modV + d);
    ids.add(1 + Math.floor(Math.random() * top));
  }
  return [...ids];
}

describe('attack g22: opaque batch encoding against the bigint reading of FF1', () => {
  it('every domain, edge segment IDs, the production cipher: encodeBatch and paced steps give the reference IDs, which decode back', async () => {
    const secret = OpaqueSecret.fromBytes(randomBytes(32), 'test');
    for (const domain of DOMAINS) {
      const tag = randomTag('g22');
      const fast = new OpaqueCodec(secret.cipherFor(tag, domain), domain);
      const reference = new OpaqueCodec(secret.cipherFor(tag, domain), domain, { reference: true });
      const ids = edgeIds(domain, fast.capacity);
      const want = reference.encodeMany(ids.map((id) => BigInt(id)));
      const batch = fast.encodeBatch(ids).map((id) => BigInt(id));
      // A clock that stands still, then runs backwards: steps stay 64 to 4,096 IDs, none lost.
      let tick = 1e6;
      const paced = await encodeInChunks(fast, ids, { budgetMs: 0.4, now: () => (tick -= 0.5) });
      const fixed = await encodeInChunks(fast, ids, 7);
      for (let i = 0; i < ids.length; i++) {
        const where = `${domain.kind}:${domain.kind === 'bits' ? domain.bits : domain.digits} segment ID ${ids[i]}`;
        assert.equal(batch[i], want[i], where);
        assert.equal(BigInt(paced[i] as number | bigint), want[i], `${where} (paced)`);
        assert.equal(BigInt(fixed[i] as number | bigint), want[i], `${where} (steps of 7)`);
      }
      assert.equal(paced.length, ids.length);
      assert.deepEqual(
        reference.decodeMany(want),
        ids.map((id) => BigInt(id)),
      );
      // Mixed number and bigint segment IDs in one batch: the same IDs.
      const mixed = ids.map((id, i) => (i % 3 === 0 ? BigInt(id) : id));
      assert.deepEqual(
        fast.encodeBatch(mixed).map((id) => BigInt(id)),
        want,
      );
    }
  });
});
