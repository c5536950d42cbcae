import { FrondError } from '../../core/errors.js';
import { parseFormat } from '../../core/id-format.js';
import type { HeldRange } from '../../core/id-gaps.js';
import { formatDomain, OpaqueCodec, type OpaqueDomain, parseDomain } from '../../core/opaque-codec.js';
import type { SegmentAllocator } from '../../core/segment-allocator.js';
import type { SegmentId } from '../../core/segment-buffer.js';
import { type CataloguedStore, type OpaqueSetting, tagNotFound } from '../../core/tag-catalogue.js';
import { type FormatSetting, kindKey, kindName, PLAIN_KIND, type TagKind } from '../../core/tag-kind.js';
import { FormattedTag } from './formatted-tag.js';
import type { OpaqueSecret } from './opaque-keys.js';

/** Segment IDs a refill takes at least: about 0.6 µs an ID encoded in a batch, ~10 µs alone. */
export const OPAQUE_BATCH = 1024;
/**
 * The fixed step size refills used before they were paced by time (OPAQUE_STEP_MS): kept as the
 * bench's reference row and the tests' step. Measured on a 2-core machine (bench/opaque-batch.ts),
 * 256 IDs took 0.1 to 0.4 ms at the median (bits:53 to digits:18) but up to 1.4 ms at the p99: a
 * count of IDs cannot say how long a step takes on another domain or machine, a clock can.
 */
export const OPAQUE_CHUNK = 256;
/** A refill starts when fewer than this many encoded IDs are left, so a request rarely waits. */
const LOW_WATER = OPAQUE_BATCH / 2;

/** A tag's IDs as served: `PLAIN` (segment IDs as they are), an opaque tag, a formatted one, or a refusal. */
export const PLAIN = 'plain';
export type TagMode = typeof PLAIN | OpaqueTag | FormattedTag | FrondError;

/**
 * One opaque tag on this node: its codec, and opaque IDs encoded ahead in batches from segment IDs
 * the allocator handed to it. Segment IDs taken but never served (a restart) are a gap, as a
 * buffer's are; no segment ID is ever encoded twice, so no opaque ID is served twice.
 */
export class OpaqueTag {
  private queue: SegmentId[] = [];
  private at = 0;
  private refilling: Promise<void> | undefined;
  /** Set by `retire`: the node is stopping, nothing more is taken from the allocator. */
  private stopped = false;
  /** Set once `retire` read the queue: a refill that ends later adds nothing to it. */
  private drained = false;

  constructor(
    readonly tag: string,
    readonly codec: OpaqueCodec,
    private readonly segment: SegmentAllocator<CataloguedStore>,
    /** The kind (`kindKey`) of the segments this tag encodes: a segment of any other is refused. */
    readonly key: string,
  ) {}

  get left(): number {
    return this.queue.length - this.at;
  }

  /**
   * A clean stop: the segment IDs taken for this tag and not served, as ascending runs (the
   * queue's encoded IDs decoded back, once the refill in flight settled). The queue is emptied and
   * no refill starts again, so nothing reported here is served after: the hand-back may give it
   * back to the table.
   */
  async retire(): Promise<HeldRange[]> {
    this.stopped = true;
    await this.refilling?.catch(() => undefined);
    const rest = this.queue.slice(this.at);
    this.queue = [];
    this.at = 0;
    this.drained = true;
    if (rest.length === 0) return [];
    const ids = this.codec
      .decodeMany(rest.map((id) => BigInt(id)))
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const runs: HeldRange[] = [];
    for (const id of ids) {
      const last = runs[runs.length - 1];
      if (last !== undefined && last.end === id) last.end = id + 1n;
      else runs.push({ start: id, end: id + 1n, reason: 'opaque_look_ahead' });
    }
    return runs;
  }

  /** An encoded ID if one is ready, without waiting; starts a refill when few are left. */
  tryNext(): SegmentId | undefined {
    if (this.left <= LOW_WATER) void this.refill().catch(() => {});
    if (this.at < this.queue.length) return this.queue[this.at++];
    return undefined;
  }

  async next(): Promise<SegmentId> {
    for (;;) {
      const id = this.tryNext();
      if (id !== undefined) return id;
      await this.refill();
    }
  }

  async nextMany(count: number): Promise<SegmentId[]> {
    while (this.left < count) await this.refill(count - this.left);
    const ids = this.queue.slice(this.at, this.at + count);
    this.at += count;
    if (this.left <= LOW_WATER) void this.refill().catch(() => {});
    return ids;
  }

  /**
   * One refill at a time: the next batch of segment IDs, encoded in steps of about OPAQUE_STEP_MS
   * with a turn of the event loop between steps (`encodeInChunks`). The encoded IDs join the queue once, at the end, with the
   * queue as it is then (requests served from it meanwhile moved `at`); each chunk is encoded in
   * one synchronous call into arrays of its own, so nothing another batch does between chunks
   * (a decode, another tag's refill) can touch them.
   */
  private refill(atLeast = 0): Promise<void> {
    if (this.refilling) return this.refilling;
    if (this.stopped)
      return Promise.reject(
        new FrondError(
          'SEGMENT_UNAVAILABLE',
          `tag ${this.tag}: this node is stopping; retry on another node`,
        ),
      );
    const run = (async () => {
      const ids = await this.segment.nextMany(this.tag, Math.max(OPAQUE_BATCH, atLeast), this.key);
      // A batch that straddles the end of the domain serves what fits; past it, ID_RANGE_EXHAUSTED.
      // A number compared with a number: against the bigint capacity each comparison of a number
      // ID cost 20 to 35 ns (of the ~300 an opaque ID costs); Number(capacity) rounds only past
      // 2^53, which no number ID reaches.
      const capacity = this.codec.capacity;
      const capacityNumber = Number(capacity);
      const inside = (id: SegmentId) =>
        typeof id === 'number' ? id >= 1 && id <= capacityNumber : id >= 1n && id <= capacity;
      const fits = ids.every(inside) ? ids : ids.filter(inside);
      const encoded = await encodeInChunks(this.codec, fits.length === 0 ? ids : fits);
      // Retired meanwhile (its look-ahead already read): nothing of this batch is served.
      if (this.drained) return;
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
 * How long one synchronous step of a refill may encode, in ms of `now()`. 1 ms is the goal for any
 * block of the event loop; 0.4 leaves the request served in the same turn its own work (its slice of
 * the queue, its JSON: ~0.06 µs an ID) and the variation of one call (a call's p99 is 2 to 3 times
 * its median on a busy 2-core machine, bench/RESULTS.md's chunk table).
 */
export const OPAQUE_STEP_MS = 0.4;
/** Fewest IDs in one `encodeBatch` call: below ~64 the per-call cost (a few µs) outweighs the IDs'. */
const MIN_STEP_IDS = 64;
/** Most IDs in one call: 4,096 × 0.5 µs is 2 ms, so only a machine 5 times faster than the bench's reaches it. */
const MAX_STEP_IDS = 4096;
/** The first estimate of a codec's cost (ms an ID), before one of its calls was timed: the slowest domain's. */
const FIRST_MS_PER_ID = 0.0015;

/** How a refill paces its encoding: the step's budget and the clock it is measured with. */
export interface StepPacing {
  budgetMs: number;
  /** ms, as `performance.now()`; injected by tests. */
  now(): number;
}

export const DEFAULT_PACING: StepPacing = { budgetMs: OPAQUE_STEP_MS, now: () => performance.now() };

/**
 * A codec's last measured cost an ID (ms), so that each refill's first step is sized right: a
 * weighted mean of its calls (the last weighs 1/4, so one call stretched by a GC or another
 * process's turn moves the estimate, and so the next step's size, by a quarter of its excess).
 */
const msPerId = new WeakMap<OpaqueCodec, number>();

/**
 * `codec.encodeBatch(ids)` in synchronous steps of about `budgetMs` each, yielding a turn of the
 * event loop between steps. A step is one `encodeBatch` call (the cost an ID falls with the size
 * of a call: one AES call per round covers every block) of as many IDs as the codec's measured cost
 * fits in the budget, 64 to 4,096. `pacing` a number: fixed steps of that many IDs (tests, the
 * bench's table of call sizes).
 */
export async function encodeInChunks(
  codec: OpaqueCodec,
  ids: readonly SegmentId[],
  pacing: StepPacing | number = DEFAULT_PACING,
): Promise<SegmentId[]> {
  const fixed = typeof pacing === 'number' ? pacing : undefined;
  const out: SegmentId[] = [];
  let at = 0;
  while (at < ids.length) {
    if (at > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    let size: number;
    // A fixed step below 1 (0, NaN) would never move on: one ID a step at the least.
    if (fixed !== undefined) size = Number.isInteger(fixed) && fixed >= 1 ? fixed : 1;
    else {
      const cost = msPerId.get(codec) ?? FIRST_MS_PER_ID;
      size = Math.min(
        MAX_STEP_IDS,
        Math.max(MIN_STEP_IDS, Math.floor((pacing as StepPacing).budgetMs / cost)),
      );
    }
    // A rest smaller than a step's worth goes with this step rather than in a turn of its own.
    if (ids.length - at < size + MIN_STEP_IDS) size = ids.length - at;
    const part = at === 0 && size >= ids.length ? ids : ids.slice(at, at + size);
    const started = fixed === undefined ? (pacing as StepPacing).now() : 0;
    const encoded = codec.encodeBatch(part);
    if (fixed === undefined) {
      const took = ((pacing as StepPacing).now() - started) / part.length;
      const last = msPerId.get(codec);
      msPerId.set(codec, last === undefined ? took : 0.75 * last + 0.25 * took);
    }
    if (at === 0 && part.length === ids.length) return encoded;
    for (const id of encoded) out.push(id);
    at += part.length;
  }
  return out;
}

/** What a node learned of a tag's kind, and the mode it serves it in. */
interface Learned {
  key: string;
  mode: TagMode;
  /** For a refusal: when to read the tag's kind from the store again. */
  until: number;
}

/** A refused tag (no secret, another secret) is read from the store again after this long. */
const REFUSAL_RECHECK_MS = 1_000;

/**
 * Which tags are opaque, for the ID handlers: what this node last learned of each tag's kind. It is
 * a hint and never trusted: every segment is taken with the kind the node serves it as, and a
 * segment granted under another kind (the row deleted and created again) is refused before any of
 * its IDs is taken (`KindChangedError`), with the granted kind, which the node learns and serves
 * instead (`TagIssuer`). So the plain path costs one Map lookup and one string comparison, and no
 * process serves a segment under a kind it remembered from before. A node without the secret, or
 * with another secret than the tag's, refuses the tag instead and never answers an unpermuted ID.
 */
export class OpaqueTags {
  private readonly learned = new Map<string, Learned>();
  private readonly pending = new Map<string, Promise<TagMode | undefined>>();

  constructor(
    private readonly segment: SegmentAllocator<CataloguedStore>,
    readonly secret: OpaqueSecret | undefined,
    private readonly now: () => number = () => Date.now(),
  ) {}

  /**
   * A clean stop: every opaque tag's look-ahead (`OpaqueTag.retire`), by tag, for the allocator's
   * hand-back (`extra`). The tags stop refilling at once.
   */
  async lookAhead(): Promise<Map<string, HeldRange[]>> {
    const tags = [...this.learned.values()].flatMap((known) =>
      known.mode instanceof OpaqueTag ? [known.mode] : [],
    );
    const held = new Map<string, HeldRange[]>();
    await Promise.all(
      tags.map(async (tag) => {
        const runs = await tag.retire();
        if (runs.length > 0) held.set(tag.tag, runs);
      }),
    );
    return held;
  }

  /** The secret's fingerprint, or null: for /readyz and `frond tag list`. */
  get fingerprint(): string | null {
    return this.secret?.fingerprint ?? null;
  }

  /**
   * At start: the opaque tags from one read of frond_tag_options, so their first requests go the
   * opaque way at once (a hint: a tag created plain since is found so by its first grant).
   */
  async preload(): Promise<void> {
    const [opaque, formats] = await Promise.all([
      this.segment.store.listOpaque(),
      this.segment.store.listFormats(),
    ]);
    for (const [tag, setting] of opaque) this.learn(tag, { opaque: setting, format: null });
    for (const [tag, format] of formats) this.learn(tag, { opaque: null, format });
  }

  /** The mode `tag` was last learned in (undefined: none yet, served as plain until a grant says otherwise). */
  modeOf(tag: string): TagMode | undefined {
    return this.learned.get(tag)?.mode;
  }

  /** Serves `tag` as `kind` from now on (a grant said so); answers the mode. */
  learn(tag: string, kind: TagKind): TagMode {
    const key = kindKey(kind);
    const known = this.learned.get(tag);
    if (known !== undefined && known.key === key && !(known.mode instanceof FrondError)) return known.mode;
    // frond never makes an opaque tag plain (its frond_tag_options row is never removed, and a plain
    // tag under its name is refused), so a grant that says plain for a tag this node knows as opaque
    // means that row was deleted by hand: serving plain IDs could repeat opaque ones already served.
    // The node keeps refusing (and keeps the opaque kind in mind) until the row is back.
    if (known?.key.startsWith('opaque ') && kind.opaque === null && kind.format === null) {
      const mode = optionsLost(tag, known.key);
      this.learned.set(tag, { key: known.key, mode, until: this.now() + REFUSAL_RECHECK_MS });
      return mode;
    }
    // Likewise a formatted tag's format is fixed for good (frond_tag_formats is never changed or
    // removed, and the store refuses another kind under the name): a grant of any other kind for a
    // tag known as formatted, or for one of its counters, means a row was changed by hand.
    if (known?.key.startsWith('format ') && key !== known.key) {
      const mode = formatLost(tag, known.key, kind);
      this.learned.set(tag, { key: known.key, mode, until: this.now() + REFUSAL_RECHECK_MS });
      return mode;
    }
    const mode = kind.format !== null ? this.formattedFor(tag, kind.format) : this.modeFor(tag, kind.opaque);
    this.learned.set(tag, {
      key,
      mode,
      until: mode instanceof FrondError ? this.now() + REFUSAL_RECHECK_MS : Number.POSITIVE_INFINITY,
    });
    return mode;
  }

  /**
   * The mode to serve `tag` in now. A refusal is kept for REFUSAL_RECHECK_MS, then the tag's kind is
   * read from the store again (one read a second per refused tag, whatever it finds): if it changed
   * (the tag was created again, a secret put right), the segment the node holds under the refused
   * kind is dropped, so the next one is granted, with its kind, from the store.
   */
  async current(tag: string): Promise<TagMode> {
    const known = this.learned.get(tag);
    if (known === undefined) return PLAIN;
    if (!(known.mode instanceof FrondError) || known.until > this.now()) return known.mode;
    known.until = this.now() + REFUSAL_RECHECK_MS;
    const mode = await this.resolve(tag);
    if (mode === undefined) return known.mode;
    if (this.learned.get(tag)?.key !== known.key) this.segment.dropIfKind(tag, known.key);
    return mode;
  }

  /** Reads the tag's kind from the store (operator routes, refusals); undefined when it has no row. */
  resolve(tag: string): Promise<TagMode | undefined> {
    let run = this.pending.get(tag);
    if (run === undefined) {
      run = this.segment.store
        .tag(tag)
        .then((entry) =>
          entry === undefined
            ? undefined
            : this.learn(
                tag,
                entry.opaque === null && entry.format === null
                  ? PLAIN_KIND
                  : { opaque: entry.opaque, format: entry.format },
              ),
        );
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
    if (mode === undefined) throw tagNotFound(tag);
    if (mode === PLAIN)
      throw new FrondError('INVALID_ARGUMENT', `tag ${tag} is not opaque: its IDs are its segment IDs`);
    if (mode instanceof FormattedTag)
      throw new FrondError(
        'INVALID_ARGUMENT',
        `tag ${tag} is formatted (${mode.format.setting.format}), not opaque: its numbers are their period and sequence as written, nothing to decode`,
      );
    if (mode instanceof FrondError) throw mode;
    return mode;
  }

  /** The formatted tag `tag`, or undefined when it is not one (or this node cannot serve it). */
  async formattedTag(tag: string): Promise<FormattedTag | undefined> {
    const mode = await this.resolve(tag);
    return mode instanceof FormattedTag ? mode : undefined;
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

  /** A formatted tag's mode; a format this version refuses (a row written by hand) is refused. */
  private formattedFor(tag: string, setting: FormatSetting): TagMode {
    try {
      return new FormattedTag(tag, parseFormat(setting), this.segment, this.now);
    } catch (error) {
      return new FrondError(
        'INVALID_CONFIG',
        `tag ${tag} has format ${JSON.stringify(setting.format)} in ${setting.timeZone} in frond_tag_formats, which this version refuses: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
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
    return new OpaqueTag(
      tag,
      new OpaqueCodec(this.secret.cipherFor(tag, domain), domain),
      this.segment,
      kindKey({ opaque: setting, format: null }),
    );
  }
}

function optionsLost(tag: string, key: string): FrondError {
  const [, domain, keyCheck] = key.split(' ');
  return new FrondError(
    'INVALID_CONFIG',
    `tag ${tag} is opaque (${domain}) but the store now grants it as plain: its frond_tag_options row was deleted; put it back (biz_tag ${JSON.stringify(tag)}, opaque_domain '${domain}', key_check '${keyCheck}'): plain IDs could repeat opaque IDs already served`,
  );
}

function formatLost(tag: string, key: string, granted: TagKind): FrondError {
  const [format, timeZone] = JSON.parse(key.slice('format '.length)) as [string, string];
  return new FrondError(
    'INVALID_CONFIG',
    `tag ${tag} is formatted (${format}, ${timeZone}) but the store now grants it as ${kindName(granted)}: a frond_tag_formats row was deleted or changed by hand; put it back (biz_tag ${JSON.stringify(tag)} and its counters, id_format ${JSON.stringify(format)}, time_zone '${timeZone}'): numbers of another kind could repeat ones already served`,
  );
}

function missingSecret(tag: string): FrondError {
  return new FrondError(
    'OPAQUE_SECRET_MISSING',
    `tag ${tag} is opaque and this node has no opaque-ID secret: start it with FROND_OPAQUE_SECRET or FROND_OPAQUE_SECRET_FILE (the one every node shares)`,
  );
}
