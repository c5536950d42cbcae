/**
 * FF1, the format-preserving encryption of NIST SP 800-38G: a keyed permutation of the integers
 * [0, radix^length). Being a permutation, it cannot map two segment IDs to one opaque ID, which is
 * the whole point: an opaque tag keeps its segments' uniqueness guarantee.
 *
 * The core does no I/O and imports no crypto library, so the block cipher is given: `encrypt`
 * must encrypt whole 16-byte blocks independently (AES in ECB mode under the tag's key), several
 * at once. FF1 needs nothing else of AES.
 */
export type BlockCipher = (blocks: Uint8Array) => Uint8Array;

const ROUNDS = 10;
const BLOCK = 16;

export interface Ff1Domain {
  /** 2 to 2^16. frond uses 2 (a bit width) and 10 (a number of decimal digits). */
  radix: number;
  /** Numerals per value; radix^length must be at least 1,000,000 (SP 800-38G's minimum domain). */
  length: number;
}

/**
 * FF1 over one domain and tweak. `encrypt`/`decrypt` take and give integers in [0, radix^length)
 * (the numeral string read as a number, most significant numeral first), so a value with leading
 * zeros is still `length` numerals long.
 */
export class Ff1 {
  readonly radix: number;
  readonly length: number;
  /** u = ⌊n/2⌋ and v = n − u: the numerals in each half. */
  private readonly u: number;
  private readonly v: number;
  private readonly b: number;
  private readonly d: number;
  private readonly tweak: Uint8Array;
  /** PRF(P ‖ Q) is a CBC-MAC whose first block P is the same every round: its cipher text, kept. */
  private readonly firstBlock: Uint8Array;
  private readonly qLength: number;
  private readonly radixBig: bigint;
  private readonly modU: bigint;
  private readonly modV: bigint;
  /** radix^u and radix^v as numbers, for the number path; undefined when they exceed what it can take. */
  private readonly fastU: number | undefined;
  private readonly fastV: number | undefined;
  /** The largest A whose join A·radix^v + B stays below 2^53 (the number path's cheap join). */
  private readonly safeHigh: number;
  /**
   * The CBC-MAC state every round's last Q block is XORed into: CIPH(P), chained through Q's
   * blocks that hold only the tweak, then XORed with the tweak bytes and zeros of Q's last block.
   * Only the round byte and NUM(half) differ between rounds and values.
   */
  private readonly state = new Uint8Array(BLOCK);
  /** `state` repeated for a whole batch, and the chain each round is built in (grown, reused). */
  private tiled = new Uint8Array(0);
  /** The last 4 bytes of `state` as a big-endian word. */
  private readonly tailWord: number;
  private scratch = new Uint8Array(0);
  private halfA = new Float64Array(0);
  private halfB = new Float64Array(0);
  /** Whether `encryptNumbers` may be used: the whole domain below 2^53, and the number path. */
  readonly numbersFit: boolean;

  constructor(
    private readonly cipher: BlockCipher,
    domain: Ff1Domain,
    tweak: Uint8Array = new Uint8Array(0),
    /** `bigIntsOnly`: never the number path (tests check one path against the other). */
    options: { bigIntsOnly?: boolean } = {},
  ) {
    const { radix, length } = domain;
    if (!Number.isInteger(radix) || radix < 2 || radix > 65_536)
      throw new RangeError(`FF1 radix ${radix} is outside 2..65536`);
    if (!Number.isInteger(length) || length < 2 || radix ** length < 1_000_000)
      throw new RangeError(`FF1 needs radix^length >= 1,000,000; ${radix}^${length} is not`);
    this.radix = radix;
    this.length = length;
    this.u = Math.floor(length / 2);
    this.v = length - this.u;
    this.b = Math.ceil(Math.ceil(this.v * Math.log2(radix)) / 8);
    this.d = 4 * Math.ceil(this.b / 4) + 4;
    this.tweak = tweak;
    this.radixBig = BigInt(radix);
    this.modU = this.radixBig ** BigInt(this.u);
    this.modV = this.radixBig ** BigInt(this.v);
    // The number path multiplies a remainder below radix^m by 256 and adds a byte: exact while
    // that (and the quotient's product) stays below 2^53, so radix^m up to 2^44.
    // It also needs the round byte and NUM(half) in Q's last block, and S within R (d <= 16):
    // true of every frond domain (b = 4, d = 8 at most) whatever the tweak.
    const fast = !options.bigIntsOnly && this.b + 1 <= BLOCK && this.d <= BLOCK;
    const fits = (m: number) => fast && radix ** m <= 2 ** 44;
    this.fastU = fits(this.u) ? radix ** this.u : undefined;
    this.fastV = fits(this.v) ? radix ** this.v : undefined;
    this.safeHigh = this.fastV === undefined ? -1 : Math.floor(2 ** 53 / this.fastV) - 1;
    this.numbersFit =
      this.fastU !== undefined && this.fastV !== undefined && this.modU * this.modV <= MAX_SAFE_BIG + 1n;
    const p = new Uint8Array(BLOCK);
    p.set([1, 2, 1, (radix >> 16) & 0xff, (radix >> 8) & 0xff, radix & 0xff, 10, this.u & 0xff]);
    writeUint32(p, 8, length);
    writeUint32(p, 12, tweak.length);
    // Copies: a cipher may answer a Buffer, whose slice() is a view, and `chain` below is XORed in place.
    this.firstBlock = new Uint8Array(cipher(p).subarray(0, BLOCK));
    this.qLength = tweak.length + ((((-tweak.length - this.b - 1) % BLOCK) + BLOCK) % BLOCK) + 1 + this.b;
    if (this.fastU !== undefined && this.fastV !== undefined) {
      // Q with round 0 and NUM 0: its blocks but the last chained from CIPH(P), the last XORed in.
      const q = new Uint8Array(this.qLength);
      q.set(tweak);
      const last = this.qLength - BLOCK;
      let chain = new Uint8Array(this.firstBlock);
      for (let at = 0; at < last; at += BLOCK) {
        for (let x = 0; x < BLOCK; x++) chain[x] = (chain[x] as number) ^ (q[at + x] as number);
        chain = new Uint8Array(cipher(chain).subarray(0, BLOCK));
      }
      for (let x = 0; x < BLOCK; x++) this.state[x] = (chain[x] as number) ^ (q[last + x] as number);
    }
    this.tailWord = readUint32(this.state, 12);
  }

  /** The domain's size, radix^length. */
  get size(): bigint {
    return this.modU * this.modV;
  }

  encrypt(value: bigint): bigint {
    return this.encryptMany([value])[0] as bigint;
  }

  decrypt(value: bigint): bigint {
    return this.decryptMany([value])[0] as bigint;
  }

  /**
   * Encrypts several values with one cipher call per round for all of them: AES over many blocks
   * at once costs little more than over one, and the 10 rounds are what a value costs.
   */
  encryptMany(values: readonly bigint[]): bigint[] {
    return this.run(values, true);
  }

  decryptMany(values: readonly bigint[]): bigint[] {
    return this.run(values, false);
  }

  private run(values: readonly bigint[], forward: boolean): bigint[] {
    for (const value of values)
      if (value < 0n || value >= this.size)
        throw new RangeError(`FF1: ${value} is outside [0, ${this.radix}^${this.length})`);
    if (this.fastU !== undefined && this.fastV !== undefined) return this.runNumbers(values, forward);
    return this.runBigInts(values, forward);
  }

  /** The rounds on bigint halves: any radix and length. */
  private runBigInts(values: readonly bigint[], forward: boolean): bigint[] {
    const count = values.length;
    const a = values.map((value) => value / this.modV);
    const b = values.map((value) => value % this.modV);
    for (let step = 0; step < ROUNDS; step++) {
      const i = forward ? step : ROUNDS - 1 - step;
      // Encrypting, the round function reads B and changes A; decrypting, the reverse.
      const input = forward ? b : a;
      const q = this.questions(count, i, (k, out, at) => writeBigInt(out, at, this.b, input[k] as bigint));
      const y = this.prf(q, count);
      const m = BigInt(i % 2 === 0 ? this.u : this.v);
      const modulus = this.radixBig ** m;
      for (let k = 0; k < count; k++) {
        const yk = readBigInt(y, k * this.d, this.d);
        if (forward) {
          const c = ((a[k] as bigint) + yk) % modulus;
          a[k] = b[k] as bigint;
          b[k] = c;
        } else {
          const c = modBig((b[k] as bigint) - yk, modulus);
          b[k] = a[k] as bigint;
          a[k] = c;
        }
      }
    }
    return a.map((high, k) => high * this.modV + (b[k] as bigint));
  }

  /**
   * The rounds on number halves, for the domains frond uses (bits:20..63, digits:6..18) and any
   * other whose halves stay below 2^45 and whose Q ends in one block. Per round it costs one
   * memcpy of the kept CBC-MAC state, b + 1 byte writes and one AES block per value, and one
   * cipher call for the whole batch; no bigint is touched between the first split and the last join.
   */
  private runNumbers(values: readonly bigint[], forward: boolean): bigint[] {
    const count = values.length;
    const modV = this.fastV as number;
    const bigModV = this.modV;
    const { a, b } = this.halves(count);
    for (let k = 0; k < count; k++) {
      const value = values[k] as bigint;
      if (value <= MAX_SAFE_BIG) {
        // Exact: the quotient q < 2^53 / radix^v, so 1 / radix^v is over half of q's ulp.
        const x = Number(value);
        const high = Math.floor(x / modV);
        a[k] = high;
        b[k] = x - high * modV;
      } else {
        a[k] = Number(value / bigModV);
        b[k] = Number(value % bigModV);
      }
    }
    this.rounds(a, b, count, forward);
    const out: bigint[] = new Array(count);
    for (let k = 0; k < count; k++) {
      const high = a[k] as number;
      // Below 2^53 the join is exact in a double: one BigInt instead of three.
      out[k] =
        high <= this.safeHigh
          ? BigInt(high * modV + (b[k] as number))
          : BigInt(high) * bigModV + BigInt(b[k] as number);
    }
    return out;
  }

  /**
   * Values below 2^53 as doubles in, doubles out (a fresh array): the domains up to 2^53 (digits
   * up to 15, bits up to 53) never meet a bigint. The caller checks the range.
   */
  encryptNumbers(values: Float64Array, out = new Float64Array(values.length)): Float64Array {
    return this.runDoubles(values, true, out);
  }

  decryptNumbers(values: Float64Array, out = new Float64Array(values.length)): Float64Array {
    return this.runDoubles(values, false, out);
  }

  /** radix^v as a number, when the number rounds serve this domain (every frond domain). */
  get halfModulus(): number | undefined {
    return this.fastU === undefined ? undefined : this.fastV;
  }

  /**
   * Encrypts values kept as their two halves, A = ⌊x / radix^v⌋ in `a` and B = x mod radix^v in
   * `b`, the first `count` of each, in place: for a domain past 2^53 (digits:16..18, bits:54..63),
   * whose values fit no double but whose halves do, so that a batch touches no bigint until its
   * results are joined. The caller checks the ranges (A < radix^u, B < radix^v).
   */
  encryptHalves(a: Float64Array, b: Float64Array, count: number): void {
    if (this.fastU === undefined || this.fastV === undefined)
      throw new RangeError(`FF1: the halves of ${this.radix}^${this.length} do not fit the number rounds`);
    if (a.length < count || b.length < count)
      throw new RangeError(`FF1: ${count} values into halves too short`);
    this.rounds(a, b, count, true);
  }

  /**
   * `out` may be `values` itself (every value is read before any is written). The halves live in
   * scratch arrays of this instance, reused call after call: a call is synchronous and its result
   * is in `out` when it returns, so no two batches ever share them.
   */
  private runDoubles(values: Float64Array, forward: boolean, out: Float64Array): Float64Array {
    if (!this.numbersFit) throw new RangeError(`FF1: ${this.radix}^${this.length} does not fit a double`);
    const count = values.length;
    if (out.length < count) throw new RangeError(`FF1: ${count} values into ${out.length}`);
    const modV = this.fastV as number;
    const size = (this.fastU as number) * modV;
    const { a, b } = this.halves(count);
    for (let k = 0; k < count; k++) {
      const x = values[k] as number;
      if (!(x >= 0 && x < size && Number.isInteger(x)))
        throw new RangeError(`FF1: ${x} is outside [0, ${this.radix}^${this.length})`);
      const high = Math.floor(x / modV);
      a[k] = high;
      b[k] = x - high * modV;
    }
    this.rounds(a, b, count, forward);
    for (let k = 0; k < count; k++) out[k] = (a[k] as number) * modV + (b[k] as number);
    return out;
  }

  /** FF1's 10 rounds on halves a (u numerals) and b (v numerals), in place. */
  private rounds(a: Float64Array, b: Float64Array, count: number, forward: boolean): void {
    const modU = this.fastU as number;
    const modV = this.fastV as number;
    const bytes = this.b;
    const d = this.d;
    const howU = reduceFor(modU);
    const howV = reduceFor(modV);
    // The block each value's last Q block is XORed into: the CBC-MAC state after P and Q's
    // constant blocks, tiled once for the whole batch and copied in every round.
    const chain = this.chainFor(count);
    const view = new DataView(chain.buffer, chain.byteOffset, chain.byteLength);
    const roundAt = BLOCK - bytes - 1;
    let x = a;
    let z = b;
    if (!forward) {
      x = b;
      z = a;
    }
    // With b <= 4 (every frond domain) a round writes only the round byte and the last word of
    // each block, with assignments, and the cipher only reads the chain: the tiled state is
    // copied in once per call, not once per round (a 16 KiB copy per round for 1,024 values).
    const small = bytes <= 4;
    if (small) chain.set(this.tiled.subarray(0, count * BLOCK));
    const tail = d - 4;
    // Encrypting, the round function reads B (z) and changes A (x), then they swap; decrypting,
    // it reads A and changes B. Either way: read z, change x, swap.
    for (let step = 0; step < ROUNDS; step++) {
      const i = forward ? step : ROUNDS - 1 - step;
      const modulus = i % 2 === 0 ? modU : modV;
      const how = i % 2 === 0 ? howU : howV;
      if (small) {
        // NUM(half) and, for b < 4, the round byte in the block's last word: one 32-bit write.
        const word = (bytes === 4 ? this.tailWord : this.tailWord ^ (i << (8 * bytes))) >>> 0;
        if (bytes === 4) {
          const roundByte = (this.state[roundAt] as number) ^ i;
          for (let k = 0, at = 0; k < count; k++, at += BLOCK) {
            chain[at + roundAt] = roundByte;
            view.setUint32(at + 12, (word ^ (z[k] as number)) >>> 0);
          }
        } else
          for (let k = 0, at = 12; k < count; k++, at += BLOCK)
            view.setUint32(at, (word ^ (z[k] as number)) >>> 0);
      } else {
        chain.set(this.tiled.subarray(0, count * BLOCK));
        for (let k = 0, at = 0; k < count; k++, at += BLOCK) {
          chain[at + roundAt] = (chain[at + roundAt] as number) ^ i;
          writeHalf(chain, at + BLOCK - bytes, bytes, z[k] as number);
        }
      }
      const s = this.cipher(chain);
      const out = new DataView(s.buffer, s.byteOffset, s.byteLength);
      const inverse = 1 / modulus;
      // The reductions every frond domain takes, inlined when encrypting (a bits domain: the last
      // word masked; digits: two 32-bit words, or a word and two 16-bit ones), the rest through `reduce`.
      if (how === LOW32 && forward) {
        const mask = modulus === 4_294_967_296 ? -1 : modulus - 1;
        for (let k = 0, at = tail; k < count; k++, at += BLOCK) {
          const c = (x[k] as number) + ((out.getUint32(at) & mask) >>> 0);
          x[k] = c >= modulus ? c - modulus : c;
        }
      } else if (how === WORDS32 && d === 8 && forward) {
        for (let k = 0, at = 0; k < count; k++, at += BLOCK) {
          const y = modExact(
            modExact(out.getUint32(at), modulus, inverse) * 4_294_967_296 + out.getUint32(at + 4),
            modulus,
            inverse,
          );
          const c = (x[k] as number) + y;
          x[k] = c >= modulus ? c - modulus : c;
        }
      } else if (how === WORDS16 && d === 8 && forward) {
        for (let k = 0, at = 0; k < count; k++, at += BLOCK) {
          const r = modExact(out.getUint32(at), modulus, inverse);
          const r2 = modExact(r * 65_536 + out.getUint16(at + 4), modulus, inverse);
          const y = modExact(r2 * 65_536 + out.getUint16(at + 6), modulus, inverse);
          const c = (x[k] as number) + y;
          x[k] = c >= modulus ? c - modulus : c;
        }
      } else
        for (let k = 0, at = 0; k < count; k++, at += BLOCK) {
          const y = reduce(out, at, d, modulus, inverse, how);
          const other = x[k] as number;
          if (forward) {
            const c = other + y;
            x[k] = c >= modulus ? c - modulus : c;
          } else {
            const c = other - y;
            x[k] = c < 0 ? c + modulus : c;
          }
        }
      const swap = x;
      x = z;
      z = swap;
    }
  }

  private halves(count: number): { a: Float64Array; b: Float64Array } {
    if (this.halfA.length < count) {
      this.halfA = new Float64Array(Math.max(count, this.halfA.length * 2));
      this.halfB = new Float64Array(this.halfA.length);
    }
    return { a: this.halfA, b: this.halfB };
  }

  /** A scratch chain of `count` blocks: reused call after call (each call is synchronous and copies out). */
  private chainFor(count: number): Uint8Array {
    const length = count * BLOCK;
    if (this.tiled.length < length) {
      const tiled = new Uint8Array(Math.max(length, this.tiled.length * 2));
      tiled.set(this.state);
      for (let filled = BLOCK; filled < tiled.length; filled *= 2) tiled.copyWithin(filled, 0, filled);
      this.tiled = tiled;
      this.scratch = new Uint8Array(tiled.length);
    }
    return this.scratch.subarray(0, length);
  }

  /** Q for every value, one after another: T ‖ 0…0 ‖ [i] ‖ [NUM(half)] in b bytes. */
  private questions(
    count: number,
    round: number,
    writeHalf: (k: number, out: Uint8Array, at: number) => void,
  ): Uint8Array {
    const q = new Uint8Array(count * this.qLength);
    for (let k = 0; k < count; k++) {
      const at = k * this.qLength;
      q.set(this.tweak, at);
      q[at + this.qLength - this.b - 1] = round;
      writeHalf(k, q, at + this.qLength - this.b);
    }
    return q;
  }

  /**
   * For each value's Q: R = PRF(P ‖ Q) (CBC-MAC, starting from the kept cipher text of P), then
   * S = R ‖ CIPH(R ⊕ [1]) ‖ … cut to d bytes. Returns the S of every value, d bytes each.
   */
  private prf(q: Uint8Array, count: number): Uint8Array {
    const blocksPerQ = this.qLength / BLOCK;
    const r = new Uint8Array(count * BLOCK);
    for (let k = 0; k < count; k++) r.set(this.firstBlock, k * BLOCK);
    const chain = new Uint8Array(count * BLOCK);
    for (let j = 0; j < blocksPerQ; j++) {
      for (let k = 0; k < count; k++) {
        const from = k * this.qLength + j * BLOCK;
        for (let x = 0; x < BLOCK; x++)
          chain[k * BLOCK + x] = (r[k * BLOCK + x] as number) ^ (q[from + x] as number);
      }
      r.set(this.cipher(chain).subarray(0, count * BLOCK));
    }
    const extra = Math.ceil(this.d / BLOCK) - 1;
    const s = new Uint8Array(count * this.d);
    let more: Uint8Array | undefined;
    if (extra > 0) {
      // CIPH(R ⊕ [j]^16) for j = 1..extra: [j]^16 is j as a 16-byte big-endian number.
      const input = new Uint8Array(count * extra * BLOCK);
      for (let k = 0; k < count; k++)
        for (let j = 1; j <= extra; j++) {
          const at = (k * extra + j - 1) * BLOCK;
          input.set(r.subarray(k * BLOCK, (k + 1) * BLOCK), at);
          writeUint32(input, at + 12, readUint32(input, at + 12) ^ j);
        }
      more = this.cipher(input);
    }
    for (let k = 0; k < count; k++) {
      const at = k * this.d;
      const first = Math.min(this.d, BLOCK);
      s.set(r.subarray(k * BLOCK, k * BLOCK + first), at);
      if (more !== undefined)
        s.set(more.subarray(k * extra * BLOCK, k * extra * BLOCK + this.d - BLOCK), at + BLOCK);
    }
    return s;
  }
}

const MAX_SAFE_BIG = BigInt(Number.MAX_SAFE_INTEGER);

/** `value` (below 2^53 and 256^bytes) as `bytes` big-endian bytes XORed into `out` at `at`. */
function writeHalf(out: Uint8Array, at: number, bytes: number, value: number): void {
  const end = at + bytes;
  let low = value;
  if (bytes > 4) {
    let high = Math.floor(value / 4_294_967_296);
    low = value - high * 4_294_967_296;
    for (let j = end - 5; j >= at; j--) {
      out[j] = (out[j] as number) ^ (high % 256);
      high = Math.floor(high / 256);
    }
  }
  const stop = Math.max(at, end - 4);
  for (let j = end - 1, rest = low >>> 0; j >= stop; j--, rest >>>= 8)
    out[j] = (out[j] as number) ^ (rest & 0xff);
}

/** How `reduce` takes NUM(S) mod m: the widest words whose running value stays exact in a double. */
const LOW32 = 0;
const WORDS32 = 1;
const WORDS16 = 2;
const BYTES = 3;
type Reduce = typeof LOW32 | typeof WORDS32 | typeof WORDS16 | typeof BYTES;

/**
 * A power of two up to 2^32 (a bits domain): S's last 4 bytes decide. Otherwise the widest words
 * w with m·2^w + m below 2^53, so that every step's x = r·2^w + word and its quotient's product
 * are exact: 32 bits up to m = 2^20 (frond's 10^3..10^6), 16 up to 2^36 (10^7..10^9), else bytes.
 */
function reduceFor(m: number): Reduce {
  if (m <= 4_294_967_296 && Number.isInteger(Math.log2(m))) return LOW32;
  if (m <= 2 ** 20) return WORDS32;
  if (m <= 2 ** 36) return WORDS16;
  return BYTES;
}

/**
 * x mod m for an integer x < 2^53 by a multiply with 1/m (a double `%` is fmod, several times
 * slower): the floor is off by at most one, which one correction puts right.
 */
function modExact(x: number, m: number, inverse: number): number {
  const r = x - Math.floor(x * inverse) * m;
  return r < 0 ? r + m : r >= m ? r - m : r;
}

/** NUM(S) mod m for S the `d` bytes at `at` (d a multiple of 4, at least 8). */
function reduce(s: DataView, at: number, d: number, m: number, inverse: number, how: Reduce): number {
  const end = at + d;
  if (how === LOW32) {
    const low = s.getUint32(end - 4);
    return m === 4_294_967_296 ? low : (low & (m - 1)) >>> 0;
  }
  let r = 0;
  if (how === WORDS32)
    for (let j = at; j < end; j += 4) r = modExact(r * 4_294_967_296 + s.getUint32(j), m, inverse);
  else if (how === WORDS16) {
    // The first word whole (r is 0 before it), then 16 bits at a time: r < 2^36, r·2^16 < 2^52.
    r = modExact(s.getUint32(at), m, inverse);
    for (let j = at + 4; j < end; j += 2) r = modExact(r * 65_536 + s.getUint16(j), m, inverse);
  } else for (let j = at; j < end; j++) r = modExact(r * 256 + s.getUint8(j), m, inverse);
  return r;
}

/** x mod m in [0, m), for a possibly negative x. */
function modBig(x: bigint, m: bigint): bigint {
  const r = x % m;
  return r < 0n ? r + m : r;
}

function writeUint32(out: Uint8Array, at: number, value: number): void {
  out[at] = (value >>> 24) & 0xff;
  out[at + 1] = (value >>> 16) & 0xff;
  out[at + 2] = (value >>> 8) & 0xff;
  out[at + 3] = value & 0xff;
}

function readUint32(from: Uint8Array, at: number): number {
  return (
    (((from[at] as number) << 24) |
      ((from[at + 1] as number) << 16) |
      ((from[at + 2] as number) << 8) |
      (from[at + 3] as number)) >>>
    0
  );
}

/** `value` as `bytes` big-endian bytes at `at`. */
function writeBigInt(out: Uint8Array, at: number, bytes: number, value: bigint): void {
  let rest = value;
  for (let j = bytes - 1; j >= 0; j--) {
    out[at + j] = Number(rest & 0xffn);
    rest >>= 8n;
  }
}

function readBigInt(from: Uint8Array, at: number, bytes: number): bigint {
  let value = 0n;
  for (let j = 0; j < bytes; j++) value = (value << 8n) | BigInt(from[at + j] as number);
  return value;
}
