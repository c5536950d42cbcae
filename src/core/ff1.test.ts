import assert from 'node:assert/strict';
import { createCipheriv } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { propertyRuns } from '../../test/support/property-runs.js';
import { type BlockCipher, Ff1 } from './ff1.js';

/**
 * AES-ECB under `keyHex` (128, 192 or 256 bits). `buffers`: answers node:crypto's Buffer itself,
 * as the server's cipher does (a Buffer's slice() is a view: FF1 must copy what it keeps).
 */
function aes(keyHex: string, buffers = false): BlockCipher {
  const key = Buffer.from(keyHex, 'hex');
  const cipher = createCipheriv(`aes-${key.length * 8}-ecb`, key, null);
  cipher.setAutoPadding(false);
  return buffers ? (blocks) => cipher.update(blocks) : (blocks) => new Uint8Array(cipher.update(blocks));
}

const DIGITS = '0123456789abcdefghijklmnopqrstuvwxyz';
const toValue = (text: string, radix: number) =>
  [...text].reduce((value, c) => value * BigInt(radix) + BigInt(DIGITS.indexOf(c)), 0n);
const toText = (value: bigint, radix: number, length: number) => {
  let text = '';
  let rest = value;
  for (let i = 0; i < length; i++) {
    text = DIGITS[Number(rest % BigInt(radix))] + text;
    rest /= BigInt(radix);
  }
  return text;
};

// NIST's FF1 samples (SP 800-38G examples, FF1samples.pdf): key, radix, tweak, plain, cipher.
const K128 = '2B7E151628AED2A6ABF7158809CF4F3C';
const K192 = `${K128}EF4359D8D580AA4F`;
const K256 = `${K192}7F036D6F04FC6A94`;
const SAMPLES: [string, number, string, string, string][] = [
  [K128, 10, '', '0123456789', '2433477484'],
  [K128, 10, '39383736353433323130', '0123456789', '6124200773'],
  [K128, 36, '3737373770717273373737', '0123456789abcdefghi', 'a9tv40mll9kdu509eum'],
  [K192, 10, '', '0123456789', '2830668132'],
  [K192, 10, '39383736353433323130', '0123456789', '2496655549'],
  [K192, 36, '3737373770717273373737', '0123456789abcdefghi', 'xbj3kv35jrawxv32ysr'],
  [K256, 10, '', '0123456789', '6657667009'],
  [K256, 10, '39383736353433323130', '0123456789', '1001623463'],
  [K256, 36, '3737373770717273373737', '0123456789abcdefghi', 'xs8a0azh2avyalyzuwd'],
];

describe('FF1 (NIST SP 800-38G)', () => {
  for (const [key, radix, tweak, plain, expected] of SAMPLES) {
    it(`matches NIST's sample: AES-${(key.length / 2) * 8}, radix ${radix}, tweak "${tweak}"`, () => {
      for (const bigIntsOnly of [false, true]) {
        const ff1 = new Ff1(aes(key), { radix, length: plain.length }, Buffer.from(tweak, 'hex'), {
          bigIntsOnly,
        });
        const encrypted = ff1.encrypt(toValue(plain, radix));
        assert.equal(toText(encrypted, radix, plain.length), expected);
        assert.equal(toText(ff1.decrypt(encrypted), radix, plain.length), plain);
      }
    });
  }

  for (const [key, radix, tweak, plain, expected] of SAMPLES) {
    it(`matches NIST's sample inside a batch of 600: AES-${(key.length / 2) * 8}, radix ${radix}, tweak "${tweak}"`, () => {
      // The server's kind of cipher (Buffers answered as they are) on the batch path.
      const ff1 = new Ff1(aes(key, true), { radix, length: plain.length }, Buffer.from(tweak, 'hex'));
      const one = new Ff1(aes(key), { radix, length: plain.length }, Buffer.from(tweak, 'hex'), {
        bigIntsOnly: true,
      });
      // The sample at 0, 1 and 599 among other values: a batch's blocks must not leak into each other.
      const values = Array.from({ length: 600 }, (_, k) => (BigInt(k) * 7_919n + 13n) % ff1.size);
      values[0] = values[1] = values[599] = toValue(plain, radix);
      const encrypted = ff1.encryptMany(values);
      for (const k of [0, 1, 599])
        assert.equal(toText(encrypted[k] as bigint, radix, plain.length), expected);
      assert.deepEqual(
        encrypted,
        values.map((value) => one.encrypt(value)),
      );
      assert.deepEqual(ff1.decryptMany(encrypted), values);
      if (ff1.numbersFit) {
        const numbers = ff1.encryptNumbers(Float64Array.from(values, Number));
        assert.deepEqual([...numbers].map(BigInt), encrypted);
        assert.deepEqual([...ff1.decryptNumbers(numbers)].map(BigInt), values);
      }
    });
  }

  it('is a bijection on a small domain, checked exhaustively (2^20 bits, 10^6 digits)', () => {
    for (const domain of [
      { radix: 2, length: 20 },
      { radix: 10, length: 6 },
    ]) {
      const ff1 = new Ff1(aes(K128), domain);
      const size = Number(ff1.size);
      const all = Array.from({ length: size }, (_, i) => BigInt(i));
      const seen = new Uint8Array(size);
      const encrypted = ff1.encryptMany(all);
      for (const value of encrypted) {
        assert.ok(value >= 0n && value < ff1.size);
        seen[Number(value)] = (seen[Number(value)] as number) + 1;
      }
      assert.ok(
        seen.every((n) => n === 1),
        `every value of ${domain.radix}^${domain.length} is hit exactly once`,
      );
      // Decryption of every 100th value (the property below covers decrypt ∘ encrypt widely).
      const sample = encrypted.filter((_, i) => i % 100 === 0);
      assert.deepEqual(
        ff1.decryptMany(sample),
        all.filter((_, i) => i % 100 === 0),
      );
    }
  });

  it('decrypts what it encrypts, and the number path agrees with the bigint one (fast-check)', () => {
    const domains = fc.oneof(
      fc.record({ radix: fc.constant(2), length: fc.integer({ min: 20, max: 64 }) }),
      fc.record({ radix: fc.constant(10), length: fc.integer({ min: 6, max: 20 }) }),
    );
    fc.assert(
      fc.property(
        domains,
        fc.bigInt({ min: 0n, max: 2n ** 64n }),
        fc.uint8Array({ maxLength: 12 }),
        (domain, raw, tweak) => {
          const fast = new Ff1(aes(K256), domain, tweak);
          const slow = new Ff1(aes(K256), domain, tweak, { bigIntsOnly: true });
          const value = raw % fast.size;
          const encrypted = fast.encrypt(value);
          assert.equal(slow.encrypt(value), encrypted);
          assert.equal(fast.decrypt(encrypted), value);
          assert.equal(slow.decrypt(encrypted), value);
        },
      ),
      { numRuns: propertyRuns(300) },
    );
  });

  it('encrypts a batch as it encrypts each value alone, on every path, under random keys and tweaks (fast-check)', () => {
    const domains = fc.oneof(
      fc.record({ radix: fc.constant(2), length: fc.integer({ min: 20, max: 64 }) }),
      fc.record({ radix: fc.constant(10), length: fc.integer({ min: 6, max: 20 }) }),
      fc.record({ radix: fc.integer({ min: 2, max: 65_536 }), length: fc.integer({ min: 2, max: 12 }) }),
    );
    fc.assert(
      fc.property(
        domains.filter(({ radix, length }) => radix ** length >= 1_000_000),
        fc.constantFrom(16, 24, 32),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.uint8Array({ maxLength: 40 }),
        fc.array(fc.bigInt({ min: 0n, max: 2n ** 64n }), { minLength: 1, maxLength: 80 }),
        fc.boolean(),
        (domain, keyBytes, key, tweak, raws, buffers) => {
          const cipher = aes(Buffer.from(key.subarray(0, keyBytes)).toString('hex'), buffers);
          const fast = new Ff1(cipher, domain, tweak);
          const slow = new Ff1(cipher, domain, tweak, { bigIntsOnly: true });
          const values = raws.map((raw) => raw % fast.size);
          const batch = fast.encryptMany(values);
          assert.deepEqual(
            batch,
            values.map((value) => slow.encrypt(value)),
          );
          assert.deepEqual(
            batch,
            values.map((value) => fast.encrypt(value)),
          );
          assert.deepEqual(slow.encryptMany(values), batch);
          assert.deepEqual(fast.decryptMany(batch), values);
          if (fast.numbersFit) {
            const numbers = fast.encryptNumbers(Float64Array.from(values, Number));
            assert.deepEqual([...numbers].map(BigInt), batch);
            assert.deepEqual([...fast.decryptNumbers(numbers)].map(BigInt), values);
          }
        },
      ),
      { numRuns: propertyRuns(300) },
    );
  });

  it('refuses domains under a million values and values outside the domain', () => {
    assert.throws(() => new Ff1(aes(K128), { radix: 10, length: 5 }), /1,000,000/);
    assert.throws(() => new Ff1(aes(K128), { radix: 1, length: 40 }), /radix/);
    const ff1 = new Ff1(aes(K128), { radix: 10, length: 6 });
    assert.throws(() => ff1.encrypt(1_000_000n), RangeError);
    assert.throws(() => ff1.encrypt(-1n), RangeError);
    for (const bad of [1_000_000, -1, 0.5, Number.NaN])
      assert.throws(() => ff1.encryptNumbers(Float64Array.of(3, bad)), RangeError, String(bad));
    const wide = new Ff1(aes(K128), { radix: 2, length: 63 });
    assert.equal(wide.numbersFit, false);
    assert.throws(() => wide.encryptNumbers(Float64Array.of(3)), RangeError);
  });
});
