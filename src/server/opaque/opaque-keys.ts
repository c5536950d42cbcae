import { createCipheriv, createHmac, hkdfSync } from 'node:crypto';
import { FrondError } from '../../core/errors.js';
import type { BlockCipher } from '../../core/ff1.js';
import { formatDomain, type OpaqueDomain } from '../../core/opaque-codec.js';
import { readGivenFile } from '../../platform/data-file.js';

/** A master secret shorter than this is refused: 32 bytes is AES-256's key, and HKDF's output. */
export const MIN_SECRET_BYTES = 32;

/**
 * The master secret opaque tags' keys come from. It is read from a file or an environment
 * variable, never from a flag (flags show in `ps`), and is never logged or shown: only its
 * fingerprint is, so operators can check that every node has the same one.
 */
export class OpaqueSecret {
  /** A true private field: `util.inspect` and `JSON.stringify` never reach it. */
  readonly #secret: Buffer;

  private constructor(secret: Buffer) {
    this.#secret = secret;
  }

  /**
   * From `FROND_OPAQUE_SECRET` (hex or base64, at least 32 bytes) or the file
   * `FROND_OPAQUE_SECRET_FILE` names (its bytes, or hex/base64 text); undefined when neither is set.
   */
  static fromEnvironment(env: NodeJS.ProcessEnv = process.env): OpaqueSecret | undefined {
    const file = env.FROND_OPAQUE_SECRET_FILE;
    const inline = env.FROND_OPAQUE_SECRET;
    if (file !== undefined && inline !== undefined)
      throw new FrondError('INVALID_CONFIG', 'FROND_OPAQUE_SECRET and FROND_OPAQUE_SECRET_FILE: set one');
    if (inline !== undefined) return OpaqueSecret.fromText(inline, 'FROND_OPAQUE_SECRET');
    if (file === undefined) return undefined;
    const bytes = readGivenFile(
      `FROND_OPAQUE_SECRET_FILE ${file}`,
      file,
      "a file holding the opaque-ID secret (at least 32 bytes, e.g. 'openssl rand -hex 32')",
    );
    const text = bytes.toString('utf8').trim();
    return /^[0-9a-fA-F]+$|^[A-Za-z0-9+/]+=*$/.test(text) && text.length >= 43
      ? OpaqueSecret.fromText(text, `FROND_OPAQUE_SECRET_FILE ${file}`)
      : OpaqueSecret.fromBytes(bytes, `FROND_OPAQUE_SECRET_FILE ${file}`);
  }

  static fromText(text: string, where: string): OpaqueSecret {
    const trimmed = text.trim();
    const bytes =
      /^[0-9a-fA-F]+$/.test(trimmed) && trimmed.length % 2 === 0
        ? Buffer.from(trimmed, 'hex')
        : Buffer.from(trimmed, 'base64');
    return OpaqueSecret.fromBytes(bytes, where);
  }

  static fromBytes(bytes: Buffer, where: string): OpaqueSecret {
    if (bytes.length < MIN_SECRET_BYTES)
      throw new FrondError(
        'INVALID_CONFIG',
        `${where} holds ${bytes.length} bytes; an opaque-ID secret needs at least ${MIN_SECRET_BYTES} (e.g. 'openssl rand -hex 32')`,
      );
    return new OpaqueSecret(Buffer.from(bytes));
  }

  /** 16 hex digits that tell secrets apart without revealing them (HMAC-SHA256 of a fixed label). */
  get fingerprint(): string {
    return createHmac('sha256', this.#secret)
      .update('frond opaque-ID secret fingerprint')
      .digest('hex')
      .slice(0, 16);
  }

  /**
   * The tag's own AES-256 key, by HKDF-SHA256 from the secret with the tag and its domain as
   * context: two tags, or one tag in two domains, never share a permutation.
   */
  keyFor(tag: string, domain: OpaqueDomain): Buffer {
    const info = Buffer.from(`frond opaque v1\0${tag}\0${formatDomain(domain)}`, 'utf8');
    return Buffer.from(hkdfSync('sha256', this.#secret, Buffer.alloc(0), info, 32));
  }

  /** A fingerprint of one tag's key, stored with the tag so that a node with another secret refuses it. */
  keyCheck(tag: string, domain: OpaqueDomain): string {
    return createHmac('sha256', this.keyFor(tag, domain))
      .update('frond key check')
      .digest('hex')
      .slice(0, 16);
  }

  /** AES-256-ECB under the tag's key, the block cipher FF1 runs on. */
  cipherFor(tag: string, domain: OpaqueDomain): BlockCipher {
    const cipher = createCipheriv('aes-256-ecb', this.keyFor(tag, domain), null);
    cipher.setAutoPadding(false);
    // A Buffer is a Uint8Array: FF1 only reads it, so no copy.
    return (blocks) => cipher.update(blocks);
  }

  /** Never the secret itself, whatever prints this object. */
  toJSON(): string {
    return `OpaqueSecret(${this.fingerprint})`;
  }

  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return this.toJSON();
  }
}
