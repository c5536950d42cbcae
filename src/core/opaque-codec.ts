import { FrondError } from './errors.js';
import { type BlockCipher, Ff1 } from './ff1.js';
import type { SegmentId } from './segment-buffer.js';

/**
 * What an opaque tag's IDs look like: `bits` (1 to 2^bits − 1; 63 fits a signed 64-bit column, 53
 * a JavaScript number) or `digits` (exactly that many decimal digits, no leading zero, as order
 * numbers are: `20491739025` is 11 digits).
 */
export type OpaqueDomain = { kind: 'bits'; bits: number } | { kind: 'digits'; digits: number };

export const MIN_OPAQUE_BITS = 20;
export const MAX_OPAQUE_BITS = 63;
export const MIN_OPAQUE_DIGITS = 6;
export const MAX_OPAQUE_DIGITS = 18;

/** `bits:63`, `digits:11`: the spelling in the admin API, the CLI and frond's table. */
export function formatDomain(domain: OpaqueDomain): string {
  return domain.kind === 'bits' ? `bits:${domain.bits}` : `digits:${domain.digits}`;
}

/** The inverse of `formatDomain`; INVALID_ARGUMENT with what is allowed. */
export function parseDomain(text: string): OpaqueDomain {
  const match = /^(bits|digits):(\d{1,2})$/.exec(text);
  const size = Number(match?.[2]);
  if (match?.[1] === 'bits' && size >= MIN_OPAQUE_BITS && size <= MAX_OPAQUE_BITS)
    return { kind: 'bits', bits: size };
  if (match?.[1] === 'digits' && size >= MIN_OPAQUE_DIGITS && size <= MAX_OPAQUE_DIGITS)
    return { kind: 'digits', digits: size };
  throw new FrondError(
    'INVALID_ARGUMENT',
    `opaque domain ${JSON.stringify(text)} is not bits:${MIN_OPAQUE_BITS}..${MAX_OPAQUE_BITS} or digits:${MIN_OPAQUE_DIGITS}..${MAX_OPAQUE_DIGITS}`,
  );
}

/** How many segment IDs an opaque tag of `domain` can serve: |S| (OpaqueCodec.capacity). */
export function domainCapacity(domain: OpaqueDomain): bigint {
  return domain.kind === 'bits' ? 2n ** BigInt(domain.bits) - 1n : 9n * 10n ** BigInt(domain.digits - 1);
}

/**
 * The first segment ID of a new opaque tag: 1 to the domain's capacity. A start beyond it would
 * make a tag that can never serve (every segment ID past the domain is refused).
 */
export function assertOpaqueStart(start: bigint, domain: OpaqueDomain): bigint {
  const capacity = domainCapacity(domain);
  if (start < 1n || start > capacity)
    throw new FrondError(
      'INVALID_ARGUMENT',
      `an opaque ${formatDomain(domain)} tag starts at a segment ID from 1 to ${capacity} (start ${start} would never serve)`,
    );
  return start;
}

/**
 * Maps a tag's segment IDs (1, 2, 3, …) one to one onto its opaque IDs, with FF1 under the tag's
 * key and cycle-walking: the opaque IDs form the set S = [min, radix^length) (no 0; for digits no
 * leading zero), segment ID s is first placed at min + s − 1, and FF1 is applied again while the
 * result falls outside S. FF1 is a permutation of [0, radix^length), so walking its cycles within
 * S is a permutation of S (each cycle that enters S leaves it only to come back), and distinct
 * segment IDs can never give one opaque ID. Walks are short: |D| / |S| steps on average (10/9 for
 * digits, about 1 for bits).
 */
export class OpaqueCodec {
  readonly domain: OpaqueDomain;
  /** How many segment IDs the tag can serve: |S|. Segment IDs above it are refused. */
  readonly capacity: bigint;
  private readonly ff1: Ff1;
  private readonly min: bigint;
  /** `min` and `capacity` as doubles when the whole domain is below 2^53 (digits up to 15, bits up to 53). */
  private readonly minNumber: number | undefined;
  private readonly capacityNumber: number | undefined;
  private scratch = new Float64Array(0);
  /**
   * A domain past 2^53 whose halves fit doubles (every frond domain): radix^v, and `min` split at
   * it, for `encodeSplit`; undefined otherwise.
   */
  private readonly split: { modV: number; minHigh: number; minLow: number; capacity: number } | undefined;
  private splitA = new Float64Array(0);
  private splitB = new Float64Array(0);
  private joinWords = new DataView(new ArrayBuffer(0));

  constructor(
    cipher: BlockCipher,
    domain: OpaqueDomain,
    /** `reference`: FF1 on bigints only, the plain reading of the standard (tests check the fast path against it). */
    options: { reference?: boolean } = {},
  ) {
    this.domain = domain;
    const radix = domain.kind === 'bits' ? 2 : 10;
    const length = domain.kind === 'bits' ? domain.bits : domain.digits;
    this.ff1 = new Ff1(cipher, { radix, length }, new Uint8Array(0), {
      bigIntsOnly: options.reference === true,
    });
    this.min = domain.kind === 'bits' ? 1n : 10n ** BigInt(domain.digits - 1);
    this.capacity = this.ff1.size - this.min;
    this.minNumber = this.ff1.numbersFit ? Number(this.min) : undefined;
    this.capacityNumber = this.ff1.numbersFit ? Number(this.capacity) : undefined;
    const modV = this.ff1.halfModulus;
    // The join below needs radix^v ≤ 2^32 and A < 2^32: true of every frond domain (bits:63 has
    // halves of 31 and 32 bits, digits:18 of 9 digits each).
    if (
      !this.ff1.numbersFit &&
      modV !== undefined &&
      modV <= 4_294_967_296 &&
      this.ff1.size / BigInt(modV) <= 4_294_967_296n &&
      !options.reference
    ) {
      const bigModV = BigInt(modV);
      this.split = {
        modV,
        minHigh: Number(this.min / bigModV),
        minLow: Number(this.min % bigModV),
        // Rounded when past 2^53, which no segment ID this path takes (a safe integer) reaches.
        capacity: Number(this.capacity),
      };
    }
  }

  /**
   * `encodeMany` for segment IDs as the allocator gives them (numbers, or bigints past 2^53), and
   * the same opaque IDs bit for bit. A domain below 2^53 runs on doubles from the segment ID to the
   * last cycle-walk step and answers numbers (no BigInt at all: making them cost a third of the
   * batch); a larger one goes the bigint way and answers bigints. Either is what a segment ID is.
   */
  encodeBatch(ids: readonly SegmentId[]): SegmentId[] {
    const min = this.minNumber;
    const capacity = this.capacityNumber;
    if (min === undefined || capacity === undefined) {
      const split = this.split && this.encodeSplit(ids, this.split);
      return split ?? this.encodeMany(ids.map((id) => BigInt(id)));
    }
    const count = ids.length;
    if (this.scratch.length < count)
      this.scratch = new Float64Array(Math.max(count, this.scratch.length * 2));
    // Reused call after call (a call is synchronous and copies its result out before returning).
    const start = this.scratch.subarray(0, count);
    for (let k = 0; k < count; k++) {
      const id = ids[k] as SegmentId;
      const n = typeof id === 'number' ? id : id <= this.capacity ? Number(id) : Number.NaN;
      if (!(n >= 1 && n <= capacity && Number.isInteger(n))) throw this.pastCapacity(id);
      start[k] = min + n - 1;
    }
    const out = this.ff1.encryptNumbers(start, start);
    // The cycle walk, as `walk` does it: the values below min take another step (bounded there).
    for (let round = 0; ; round++) {
      if (round === 64) throw walkTooLong();
      const outside: number[] = [];
      for (let k = 0; k < count; k++) if ((out[k] as number) < min) outside.push(k);
      if (outside.length === 0) break;
      const again = this.ff1.encryptNumbers(Float64Array.from(outside, (k) => out[k] as number));
      for (let j = 0; j < outside.length; j++) out[outside[j] as number] = again[j] as number;
    }
    const encoded: number[] = new Array(count);
    for (let k = 0; k < count; k++) encoded[k] = out[k] as number;
    return encoded;
  }

  /**
   * `encodeBatch` for a domain past 2^53 (digits:16..18, bits:54..63): each value is kept as its
   * two FF1 halves in doubles from the segment ID (split arithmetically, with `min` split once) to
   * the last cycle-walk step, and only the result is joined into a bigint, so a value costs one
   * BigInt instead of about 10 BigInt operations (the conversion, `min + id − 1`, the range
   * checks, two divisions to split, three to join, the walk's comparisons). The same IDs bit for
   * bit; bigints out, as `encodeMany` answers. Undefined (the caller goes the bigint way) when a
   * segment ID is not a safe integer.
   */
  private encodeSplit(
    ids: readonly SegmentId[],
    split: { modV: number; minHigh: number; minLow: number; capacity: number },
  ): bigint[] | undefined {
    const { modV, minHigh, minLow, capacity } = split;
    const count = ids.length;
    if (this.splitA.length < count) {
      this.splitA = new Float64Array(Math.max(count, this.splitA.length * 2));
      this.splitB = new Float64Array(this.splitA.length);
    }
    const a = this.splitA;
    const b = this.splitB;
    for (let k = 0; k < count; k++) {
      const id = ids[k] as SegmentId;
      if (typeof id !== 'number' || !Number.isSafeInteger(id)) return undefined;
      if (!(id >= 1 && id <= capacity)) throw this.pastCapacity(id);
      // min + id − 1 split at radix^v: (minHigh + high + carry, minLow + low − carry·radix^v).
      const s = id - 1;
      const high = Math.floor(s / modV);
      const low = minLow + (s - high * modV);
      const carry = low >= modV ? 1 : 0;
      a[k] = minHigh + high + carry;
      b[k] = low - carry * modV;
    }
    this.ff1.encryptHalves(a, b, count);
    // The cycle walk, as `walk` does it: x < min when its high half is below min's, or equal and
    // its low half below.
    for (let round = 0; ; round++) {
      if (round === 64) throw walkTooLong();
      const outside: number[] = [];
      for (let k = 0; k < count; k++) {
        const high = a[k] as number;
        if (high < minHigh || (high === minHigh && (b[k] as number) < minLow)) outside.push(k);
      }
      if (outside.length === 0) break;
      const againA = Float64Array.from(outside, (k) => a[k] as number);
      const againB = Float64Array.from(outside, (k) => b[k] as number);
      this.ff1.encryptHalves(againA, againB, outside.length);
      for (let j = 0; j < outside.length; j++) {
        const k = outside[j] as number;
        a[k] = againA[j] as number;
        b[k] = againB[j] as number;
      }
    }
    // A·radix^v + B as two 32-bit words, in exact doubles, then one BigInt each (getBigUint64)
    // instead of four (two conversions, a product, a sum). radix^v ≤ 2^32 and A < 2^31 for every
    // frond domain; radix^v = c1·2^16 + c0, so every product and sum below stays under 2^49.
    const c1 = Math.floor(modV / 65_536);
    const c0 = modV - c1 * 65_536;
    const words = this.joinView(count);
    for (let k = 0, at = 0; k < count; k++, at += 8) {
      const high = a[k] as number;
      const m = high * c1;
      const mh = Math.floor(m / 65_536);
      const low = (m - mh * 65_536) * 65_536 + high * c0 + (b[k] as number);
      const carry = Math.floor(low / 4_294_967_296);
      words.setUint32(at, low - carry * 4_294_967_296, true);
      words.setUint32(at + 4, mh + carry, true);
    }
    const encoded: bigint[] = new Array(count);
    for (let k = 0, at = 0; k < count; k++, at += 8) encoded[k] = words.getBigUint64(at, true);
    return encoded;
  }

  /** 8 bytes a value, reused call after call (a call is synchronous and copies its result out). */
  private joinView(count: number): DataView {
    if (this.joinWords.byteLength < count * 8)
      this.joinWords = new DataView(new ArrayBuffer(Math.max(count * 8, this.joinWords.byteLength * 2)));
    return this.joinWords;
  }

  encode(id: bigint): bigint {
    return this.encodeMany([id])[0] as bigint;
  }

  decode(opaque: bigint): bigint {
    return this.decodeMany([opaque])[0] as bigint;
  }

  /** Opaque IDs of segment IDs 1..capacity; ID_RANGE_EXHAUSTED above. One cipher call per round per walk. */
  encodeMany(ids: readonly bigint[]): bigint[] {
    const start = ids.map((id) => {
      if (id < 1n || id > this.capacity) throw this.pastCapacity(id);
      return this.min + id - 1n;
    });
    return this.walk(start, (values) => this.ff1.encryptMany(values));
  }

  /** The segment ID behind an opaque ID (support tooling); INVALID_ID if it cannot be one. */
  decodeMany(opaques: readonly bigint[]): bigint[] {
    for (const opaque of opaques)
      if (opaque < this.min || opaque >= this.ff1.size)
        throw new FrondError(
          'INVALID_ID',
          `${opaque} is not an opaque ${formatDomain(this.domain)} ID (outside [${this.min}, ${this.ff1.size}))`,
        );
    return this.walk(opaques, (values) => this.ff1.decryptMany(values)).map((x) => x - this.min + 1n);
  }

  private walk(values: readonly bigint[], step: (values: bigint[]) => bigint[]): bigint[] {
    const out = step([...values]);
    // The values that landed outside S take another step; a cycle returns to S, so this ends
    // (bounded anyway: the chance of 64 steps outside a set that is 9/10 of the domain is 10^-64).
    for (let round = 0; round < 64; round++) {
      const outside: number[] = [];
      for (let i = 0; i < out.length; i++) if ((out[i] as bigint) < this.min) outside.push(i);
      if (outside.length === 0) return out;
      const again = step(outside.map((i) => out[i] as bigint));
      outside.forEach((i, k) => {
        out[i] = again[k] as bigint;
      });
    }
    throw walkTooLong();
  }

  private pastCapacity(id: SegmentId): FrondError {
    return new FrondError(
      'ID_RANGE_EXHAUSTED',
      `segment ID ${id} is past the ${this.capacity} IDs an opaque ${formatDomain(this.domain)} tag can hold`,
    );
  }
}

function walkTooLong(): FrondError {
  return new FrondError('INTERNAL', 'FF1 cycle walk did not return to the domain in 64 steps');
}
