import { FrondError } from '../core/errors.js';
import { formatDomain, OpaqueCodec, type OpaqueDomain, parseDomain } from '../core/opaque-codec.js';
import type { SegmentAllocator } from '../core/segment-allocator.js';
import type { OpaqueSetting, TagStore } from '../core/tag-admin.js';
import type { OpaqueSecret } from './opaque-keys.js';

/** Segment IDs encoded in one `encodeMany`: ~1.7 µs an ID in a batch of 1,024, ~12 µs alone. */
export const OPAQUE_BATCH = 1024;
/** A refill starts when fewer than this many encoded IDs are left, so a request rarely waits. */
const LOW_WATER = OPAQUE_BATCH / 2;

/** A tag's IDs as served: `PLAIN` (segment IDs as they are), an opaque tag, or a refusal. */
export const PLAIN = 'plain';
export type TagMode = typeof PLAIN | OpaqueTag | FrondError;

/**
 * One opaque tag on this node: its codec, and opaque IDs encoded ahead in batches from segment IDs
 * the allocator handed to it. Segment IDs taken but never served (a restart) are a gap, as a
 * buffer's are; no segment ID is ever encoded twice, so no opaque ID is served twice.
 */
export class OpaqueTag {
  private queue: bigint[] = [];
  private at = 0;
  private refilling: Promise<void> | undefined;

  constructor(
    readonly tag: string,
    readonly codec: OpaqueCodec,
    private readonly segment: SegmentAllocator<TagStore>,
  ) {}

  get left(): number {
    return this.queue.length - this.at;
  }

  /** An encoded ID if one is ready, without waiting; starts a refill when few are left. */
  tryNext(): bigint | undefined {
    if (this.left <= LOW_WATER) void this.refill().catch(() => {});
    if (this.at < this.queue.length) return this.queue[this.at++];
    return undefined;
  }

  async next(): Promise<bigint> {
    for (;;) {
      const id = this.tryNext();
      if (id !== undefined) return id;
      await this.refill();
    }
  }

  async nextMany(count: number): Promise<bigint[]> {
    while (this.left < count) await this.refill(count - this.left);
    const ids = this.queue.slice(this.at, this.at + count);
    this.at += count;
    if (this.left <= LOW_WATER) void this.refill().catch(() => {});
    return ids;
  }

  /** One refill at a time: the next batch of segment IDs, encoded in one call. */
  private refill(atLeast = 0): Promise<void> {
    if (this.refilling) return this.refilling;
    const run = (async () => {
      const ids = (await this.segment.nextMany(this.tag, Math.max(OPAQUE_BATCH, atLeast))).map((id) =>
        BigInt(id),
      );
      // A batch that straddles the end of the domain serves what fits; past it, ID_RANGE_EXHAUSTED.
      const capacity = this.codec.capacity;
      const fits = ids.filter((id) => id >= 1n && id <= capacity);
      const encoded = this.codec.encodeMany(fits.length === 0 ? ids : fits);
      this.queue = this.at === 0 ? this.queue.concat(encoded) : this.queue.slice(this.at).concat(encoded);
      this.at = 0;
    })();
    this.refilling = run;
    const done = () => {
      this.refilling = undefined;
    };
    run.then(done, done);
    return run;
  }
}

/**
 * Which tags are opaque, for the ID handlers. A tag's mode is fixed when it is created (its row and
 * its setting in one transaction, never changed), so it is read once per node and kept: the plain
 * path costs one Map lookup. A node without the secret, or with another secret than the tag's,
 * keeps the refusal instead and never answers an unpermuted ID.
 */
export class OpaqueTags {
  private readonly modes = new Map<string, TagMode>();
  private readonly pending = new Map<string, Promise<TagMode | undefined>>();

  constructor(
    private readonly segment: SegmentAllocator<TagStore>,
    readonly secret: OpaqueSecret | undefined,
  ) {}

  /** The secret's fingerprint, or null: for /readyz and `frond tag list`. */
  get fingerprint(): string | null {
    return this.secret?.fingerprint ?? null;
  }

  /**
   * At start: the modes of the tags the allocator listed, from one read of frond_tag_options made
   * after that list (a tag listed then and without a setting now was created plain).
   */
  async preload(): Promise<void> {
    const listed = this.segment.tags();
    const opaque = await this.segment.store.listOpaque();
    for (const tag of listed) this.modes.set(tag, this.modeFor(tag, opaque.get(tag) ?? null));
  }

  /** The known mode of `tag`, or undefined until it has been read (`resolve`). */
  modeOf(tag: string): TagMode | undefined {
    return this.modes.get(tag);
  }

  /** Reads the tag's mode from the store; undefined when the tag has no row (not kept). */
  resolve(tag: string): Promise<TagMode | undefined> {
    const known = this.modes.get(tag);
    if (known !== undefined) return Promise.resolve(known);
    let run = this.pending.get(tag);
    if (run === undefined) {
      run = this.segment.store.tagOptions(tag).then((options) => {
        if (options === undefined) return undefined;
        const mode = this.modes.get(tag) ?? this.modeFor(tag, options.opaque);
        this.modes.set(tag, mode);
        return mode;
      });
      const current = run;
      const forget = () => {
        if (this.pending.get(tag) === current) this.pending.delete(tag);
      };
      run.then(forget, forget);
      this.pending.set(tag, run);
    }
    return run;
  }

  /** The opaque tag, for decoding; rejects for a plain tag or one this node cannot serve. */
  async opaqueTag(tag: string): Promise<OpaqueTag> {
    const mode = await this.resolve(tag);
    if (mode === undefined) throw new FrondError('TAG_NOT_FOUND', `tag ${tag} has no row in leaf_alloc`);
    if (mode === PLAIN)
      throw new FrondError('INVALID_ARGUMENT', `tag ${tag} is not opaque: its IDs are its segment IDs`);
    if (mode instanceof FrondError) throw mode;
    return mode;
  }

  /** The setting a new opaque tag is stored with; OPAQUE_SECRET_MISSING without a secret. */
  settingFor(tag: string, domain: OpaqueDomain): OpaqueSetting {
    if (this.secret === undefined) throw missingSecret(tag);
    return { domain: formatDomain(domain), keyCheck: this.secret.keyCheck(tag, domain) };
  }

  /** Whether this node's secret is the one `setting` was made with (null without a secret). */
  matches(tag: string, setting: OpaqueSetting): boolean | null {
    if (this.secret === undefined) return null;
    return this.secret.keyCheck(tag, parseDomain(setting.domain)) === setting.keyCheck;
  }

  private modeFor(tag: string, setting: OpaqueSetting | null): TagMode {
    if (setting === null) return PLAIN;
    if (this.secret === undefined) return missingSecret(tag);
    let domain: OpaqueDomain;
    try {
      domain = parseDomain(setting.domain);
    } catch {
      return new FrondError(
        'INVALID_CONFIG',
        `tag ${tag} has opaque domain ${JSON.stringify(setting.domain)} in frond_tag_options, which this version does not know`,
      );
    }
    if (this.secret.keyCheck(tag, domain) !== setting.keyCheck)
      return new FrondError(
        'OPAQUE_SECRET_MISMATCH',
        `tag ${tag} is opaque under another secret than this node's (fingerprint ${this.secret.fingerprint}): every node must have the same FROND_OPAQUE_SECRET(_FILE); refused rather than serve other IDs`,
      );
    return new OpaqueTag(tag, new OpaqueCodec(this.secret.cipherFor(tag, domain), domain), this.segment);
  }
}

function missingSecret(tag: string): FrondError {
  return new FrondError(
    'OPAQUE_SECRET_MISSING',
    `tag ${tag} is opaque and this node has no opaque-ID secret: start it with FROND_OPAQUE_SECRET or FROND_OPAQUE_SECRET_FILE (the one every node shares)`,
  );
}
