import assert from 'node:assert/strict';
import { createCipheriv } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { propertyRuns } from '../../test/support/property-runs.js';
import { isFrondError } from './errors.js';
import type { BlockCipher } from './ff1.js';
import {
  assertOpaqueStart,
  domainCapacity,
  formatDomain,
  OpaqueCodec,
  type OpaqueDomain,
  parseDomain,
} from './opaque-codec.js';

function aes(seed: number): BlockCipher {
  const cipher = createCipheriv('aes-256-ecb', Buffer.alloc(32, seed), null);
  cipher.setAutoPadding(false);
  return (blocks) => new Uint8Array(cipher.update(blocks));
}

function aesKey(key: Uint8Array): BlockCipher {
  const cipher = createCipheriv('aes-256-ecb', key, null);
  cipher.setAutoPadding(false);
  return (blocks) => new Uint8Array(cipher.update(blocks));
}

/** Encodes segment IDs from..to in batches of 4,096, as a node would. */
function encodeRange(codec: OpaqueCodec, from: bigint, count: number): bigint[] {
  const out: bigint[] = [];
  for (let done = 0; done < count; done += 4096) {
    const batch = Array.from({ length: Math.min(4096, count - done) }, (_, i) => from + BigInt(done + i));
    out.push(...codec.encodeMany(batch));
  }
  return out;
}

describe('OpaqueCodec', () => {
  for (const domain of [
    { kind: 'bits', bits: 20 },
    { kind: 'digits', digits: 6 },
  ] satisfies OpaqueDomain[]) {
    it(`is a permutation of its whole set on ${formatDomain(domain)}, checked exhaustively`, () => {
      const codec = new OpaqueCodec(aes(1), domain);
      const count = Number(codec.capacity);
      const low = domain.kind === 'bits' ? 1 : 100_000;
      const opaque = encodeRange(codec, 1n, count);
      const seen = new Uint8Array(count);
      for (const id of opaque) {
        const index = Number(id) - low;
        assert.ok(index >= 0 && index < count, `${id} lies outside the set`);
        assert.equal(seen[index], 0, `${id} twice`);
        seen[index] = 1;
      }
      const sample = opaque.filter((_, i) => i % 97 === 0);
      assert.deepEqual(
        codec.decodeMany(sample),
        sample.map((_, k) => BigInt(k * 97 + 1)),
      );
    });
  }

  it('gives 2,000,000 consecutive segment IDs 2,000,000 distinct 63-bit IDs, every one in [1, 2^63)', () => {
    const codec = new OpaqueCodec(aes(2), { kind: 'bits', bits: 63 });
    const opaque = encodeRange(codec, 1n, 2_000_000);
    assert.equal(new Set(opaque).size, 2_000_000);
    assert.ok(opaque.every((id) => id >= 1n && id < 2n ** 63n));
  });

  it('shows no order: about half of successive IDs go up, and the digits tag keeps its digit count', () => {
    for (const domain of [
      { kind: 'bits', bits: 53 },
      { kind: 'digits', digits: 11 },
    ] satisfies OpaqueDomain[]) {
      const codec = new OpaqueCodec(aes(3), domain);
      const opaque = encodeRange(codec, 1n, 20_000);
      let up = 0;
      for (let i = 1; i < opaque.length; i++) if ((opaque[i] as bigint) > (opaque[i - 1] as bigint)) up++;
      // Binomial(19,999, ½): 3 standard deviations are ±1.1 % of it.
      const share = up / (opaque.length - 1);
      assert.ok(
        Math.abs(share - 0.5) < 0.011,
        `${(share * 100).toFixed(1)} % go up on ${formatDomain(domain)}`,
      );
      if (domain.kind === 'digits') assert.ok(opaque.every((id) => String(id).length === 11));
    }
  });

  it('decodes what it encodes, anywhere in the range (fast-check)', () => {
    const domains = fc.oneof(
      fc.integer({ min: 20, max: 63 }).map((bits): OpaqueDomain => ({ kind: 'bits', bits })),
      fc.integer({ min: 6, max: 18 }).map((digits): OpaqueDomain => ({ kind: 'digits', digits })),
    );
    fc.assert(
      fc.property(domains, fc.bigInt({ min: 1n, max: 2n ** 63n }), (domain, raw) => {
        const codec = new OpaqueCodec(aes(4), domain);
        const id = ((raw - 1n) % codec.capacity) + 1n;
        assert.equal(codec.decode(codec.encode(id)), id);
      }),
      { numRuns: propertyRuns(300) },
    );
  });

  it('encodes a batch bit for bit as it encodes each ID alone and as the bigint reading of FF1 does, under random keys (fast-check)', () => {
    const domains = fc.oneof(
      fc.integer({ min: 20, max: 63 }).map((bits): OpaqueDomain => ({ kind: 'bits', bits })),
      fc.integer({ min: 6, max: 18 }).map((digits): OpaqueDomain => ({ kind: 'digits', digits })),
    );
    fc.assert(
      fc.property(
        domains,
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.array(fc.bigInt({ min: 1n, max: 2n ** 63n }), { minLength: 1, maxLength: 300 }),
        fc.boolean(),
        (domain, key, raws, asNumbers) => {
          const cipher = aesKey(key);
          const codec = new OpaqueCodec(cipher, domain);
          const reference = new OpaqueCodec(cipher, domain, { reference: true });
          // Segment IDs anywhere in the range, with the last ones of the range (where a digits
          // tag's cycle walk is as likely as anywhere) and a run from 1, as refills take them.
          const ids = raws.map((raw) => ((raw - 1n) % codec.capacity) + 1n);
          ids.push(codec.capacity, 1n, 2n, 3n);
          const given = ids.map((id) =>
            asNumbers && id <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(id) : id,
          );
          const batch = codec.encodeBatch(given).map(BigInt);
          assert.deepEqual(
            batch,
            ids.map((id) => codec.encode(id)),
          );
          assert.deepEqual(batch, reference.encodeMany(ids));
          assert.deepEqual(codec.encodeMany(ids), batch);
          assert.equal(new Set(batch).size, new Set(ids).size);
          assert.deepEqual(codec.decodeMany(batch), ids);
          assert.deepEqual(reference.decodeMany(batch), ids);
        },
      ),
      { numRuns: propertyRuns(200) },
    );
  });

  it('past 2^53, a batch of segment IDs as numbers (each value kept as its two FF1 halves) encodes as the bigint reading does (fast-check)', () => {
    const domains = fc.oneof(
      fc.integer({ min: 54, max: 63 }).map((bits): OpaqueDomain => ({ kind: 'bits', bits })),
      fc.integer({ min: 16, max: 18 }).map((digits): OpaqueDomain => ({ kind: 'digits', digits })),
    );
    fc.assert(
      fc.property(
        domains,
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.array(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), { minLength: 1, maxLength: 300 }),
        (domain, key, raws) => {
          const cipher = aesKey(key);
          const codec = new OpaqueCodec(cipher, domain);
          const reference = new OpaqueCodec(cipher, domain, { reference: true });
          const top = Math.min(Number.MAX_SAFE_INTEGER, Number(codec.capacity));
          // A run from 1 (as refills take them), the largest safe ones, and random ones: the split of
          // min + id − 1 carries into the high half for some of them.
          const ids = [...raws.map((raw) => ((raw - 1) % top) + 1), 1, 2, 3, top, top - 1];
          const batch = codec.encodeBatch(ids);
          assert.ok(batch.every((id) => typeof id === 'bigint'));
          assert.deepEqual(batch, reference.encodeMany(ids.map(BigInt)));
          assert.deepEqual(reference.decodeMany(batch as bigint[]), ids.map(BigInt));
        },
      ),
      { numRuns: propertyRuns(200) },
    );
  });

  it('answers numbers from a batch when its domain is below 2^53, bigints above', () => {
    const small = new OpaqueCodec(aes(6), { kind: 'digits', digits: 15 }).encodeBatch([1, 2n]);
    assert.ok(small.every((id) => typeof id === 'number'));
    const large = new OpaqueCodec(aes(6), { kind: 'bits', bits: 54 }).encodeBatch([1, 2n]);
    assert.ok(large.every((id) => typeof id === 'bigint'));
  });

  it('refuses segment IDs past its capacity, opaque IDs outside its set and unknown domains', () => {
    const codec = new OpaqueCodec(aes(5), { kind: 'digits', digits: 6 });
    assert.equal(codec.capacity, 900_000n);
    assert.throws(
      () => codec.encode(900_001n),
      (error) => isFrondError(error, 'ID_RANGE_EXHAUSTED'),
    );
    assert.throws(
      () => codec.encode(0n),
      (error) => isFrondError(error, 'ID_RANGE_EXHAUSTED'),
    );
    for (const bad of [900_001, 0, -1, 1.5, Number.NaN, 900_001n, 2n ** 64n])
      assert.throws(
        () => codec.encodeBatch([1, bad]),
        (error) => isFrondError(error, 'ID_RANGE_EXHAUSTED'),
        String(bad),
      );
    assert.throws(
      () => codec.decode(99_999n),
      (error) => isFrondError(error, 'INVALID_ID'),
    );
    assert.deepEqual(parseDomain('bits:63'), { kind: 'bits', bits: 63 });
    assert.deepEqual(parseDomain('digits:11'), { kind: 'digits', digits: 11 });
    for (const bad of ['bits:64', 'bits:19', 'digits:5', 'digits:19', 'hex:8', 'bits:'])
      assert.throws(
        () => parseDomain(bad),
        (error) => isFrondError(error, 'INVALID_ARGUMENT'),
      );
  });

  it('a new tag starts within its domain: 1 to the capacity the codec has', () => {
    for (const domain of [
      { kind: 'bits', bits: 20 },
      { kind: 'bits', bits: 63 },
      { kind: 'digits', digits: 6 },
      { kind: 'digits', digits: 18 },
    ] satisfies OpaqueDomain[]) {
      const capacity = new OpaqueCodec(aes(1), domain).capacity;
      assert.equal(domainCapacity(domain), capacity, formatDomain(domain));
      assert.equal(assertOpaqueStart(capacity, domain), capacity);
      assert.equal(assertOpaqueStart(1n, domain), 1n);
      for (const bad of [0n, -5n, capacity + 1n])
        assert.throws(
          () => assertOpaqueStart(bad, domain),
          (error) => isFrondError(error, 'INVALID_ARGUMENT') && /never serve/.test(error.message),
        );
    }
  });
});
