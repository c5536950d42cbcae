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
    // The number path multiplies a half by 256 and adds a byte: exact while that stays below 2^53.
    const fits = (m: number) => !options.bigIntsOnly && radix ** m * 256 + 256 <= Number.MAX_SAFE_INTEGER;
    this.fastU = fits(this.u) ? radix ** this.u : undefined;
    this.fastV = fits(this.v) ? radix ** this.v : undefined;
    const p = new Uint8Array(BLOCK);
    p.set([1, 2, 1, (radix >> 16) & 0xff, (radix >> 8) & 0xff, radix & 0xff, 10, this.u & 0xff]);
    writeUint32(p, 8, length);
    writeUint32(p, 12, tweak.length);
    this.firstBlock = cipher(p).slice(0, BLOCK);
    this.qLength = tweak.length + ((((-tweak.length - this.b - 1) % BLOCK) + BLOCK) % BLOCK) + 1 + this.b;
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

  /** The same rounds on number halves, several times faster, for domains up to about 2^90. */
  private runNumbers(values: readonly bigint[], forward: boolean): bigint[] {
    const count = values.length;
    const modV = this.fastV as number;
    const modU = this.fastU as number;
    const bigModV = this.modV;
    const a = new Float64Array(count);
    const b = new Float64Array(count);
    for (let k = 0; k < count; k++) {
      const value = values[k] as bigint;
      a[k] = Number(value / bigModV);
      b[k] = Number(value % bigModV);
    }
    for (let step = 0; step < ROUNDS; step++) {
      const i = forward ? step : ROUNDS - 1 - step;
      const input = forward ? b : a;
      const q = this.questions(count, i, (k, out, at) => writeNumber(out, at, this.b, input[k] as number));
      const y = this.prf(q, count);
      const modulus = i % 2 === 0 ? modU : modV;
      for (let k = 0; k < count; k++) {
        // y mod radix^m, byte by byte: the running value stays below radix^m * 256 < 2^53.
        let yk = 0;
        const start = k * this.d;
        for (let j = 0; j < this.d; j++) yk = (yk * 256 + (y[start + j] as number)) % modulus;
        if (forward) {
          const c = ((a[k] as number) + yk) % modulus;
          a[k] = b[k] as number;
          b[k] = c;
        } else {
          const c = ((b[k] as number) - yk + modulus) % modulus;
          b[k] = a[k] as number;
          a[k] = c;
        }
      }
    }
    const out: bigint[] = new Array(count);
    for (let k = 0; k < count; k++) out[k] = BigInt(a[k] as number) * bigModV + BigInt(b[k] as number);
    return out;
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

function writeNumber(out: Uint8Array, at: number, bytes: number, value: number): void {
  let rest = value;
  for (let j = bytes - 1; j >= 0; j--) {
    out[at + j] = rest % 256;
    rest = Math.floor(rest / 256);
  }
}

function readBigInt(from: Uint8Array, at: number, bytes: number): bigint {
  let value = 0n;
  for (let j = 0; j < bytes; j++) value = (value << 8n) | BigInt(from[at + j] as number);
  return value;
}
