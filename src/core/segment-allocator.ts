import { type Clock, within } from './clock.js';
import { describeError, FrondError, type FrondErrorCode, isFrondError } from './errors.js';
import { COUNTER_SEPARATOR, parseCounterName } from './id-format.js';
import { type Gap, gapSize, type HeldRange } from './id-gaps.js';
import type { Logger } from './logger.js';
import { type CoreObserver, NO_CORE_OBSERVER } from './observer.js';
import {
  DEFAULT_SEGMENT_BUFFER_OPTIONS,
  type IdRun,
  SegmentBuffer,
  type SegmentBufferOptions,
  type SegmentBufferState,
  type SegmentId,
} from './segment-buffer.js';
import type { SegmentStore } from './segment-store.js';
import { assertValidTag, invalidTag, tagProblem } from './tag.js';
import { type TagCatalogue, tagNotFound } from './tag-catalogue.js';

/** A failed call to the store: its code (STORE_UNAVAILABLE for anything not a FrondError), message and time. */
export interface StoreFailure {
  code: FrondErrorCode;
  message: string;
  at: number;
}

/** What the allocator uses of a store: the segment primitive, and the tag list it refreshes from. */
export type AllocatorStore = SegmentStore & Pick<TagCatalogue, 'listTags'>;

export interface SegmentAllocatorOptions extends SegmentBufferOptions {
  /** How often the tag list is read again. Leaf: 60 s. */
  tagRefreshMs: number;
  /** A tag found missing is answered 404 for this long without asking the store again. */
  missingTagTtlMs: number;
  /**
   * Tags numbered densely (`--dense-tag`): no look-ahead (the next segment loads when the current
   * one runs out, so a request waits for the database once per segment) and the table's step on
   * every load. A crash then loses at most one segment of the table's step.
   */
  dense?: (tag: string) => boolean;
}

/** What `handBackAll` did, over every tag. */
export interface HandBackSummary {
  /** Tags that held IDs at the stop. */
  tags: number;
  /** IDs that went back to the table. */
  handedBack: bigint;
  /** The ranges recorded as gaps instead. */
  gaps: Gap[];
  /** Tags whose hand-back failed or timed out: their next start reports what they held as a crash. */
  failed: string[];
}

export interface HandBackOptions {
  /**
   * Ranges the server took from the buffers and did not serve (an opaque tag's look-ahead), by the
   * buffer's tag, given back with the buffer's own.
   */
  extra?: ReadonlyMap<string, readonly HeldRange[]>;
  /** The whole hand-back's bound; a database that does not answer must not hold the stop. Default 5 s. */
  timeoutMs?: number;
}

/** Hand-backs in flight at once: each is one transaction (two on PostgreSQL), and the pool is small. */
const HAND_BACK_CONCURRENCY = 4;

export const DEFAULT_SEGMENT_ALLOCATOR_OPTIONS: SegmentAllocatorOptions = {
  ...DEFAULT_SEGMENT_BUFFER_OPTIONS,
  tagRefreshMs: 60_000,
  missingTagTtlMs: 1_000,
};

/** The missing-tag memory is bounded so that requests for random names cannot grow it forever. */
const MAX_MISSING_TAGS = 10_000;

/**
 * All tags of one node: a double buffer per tag, created lazily. Unlike Leaf, a tag that is not in
 * memory yet is looked up in the table on its first request, so a freshly inserted row is served
 * at once, and a tag with no row is TAG_NOT_FOUND (404), not a generic failure.
 */
export class SegmentAllocator<S extends AllocatorStore = AllocatorStore> {
  private readonly buffers = new Map<string, SegmentBuffer>();
  private readonly missing = new Map<string, number>();
  /** Tags of the table that cannot be served, each reported once when a refresh first finds it. */
  private readonly unservable = new Set<string>();
  private cancelRefresh: (() => void) | undefined;
  private closed = false;
  /** Set by `handBackAll`: no new buffer is made, every one is retired. */
  private stopping = false;
  /** Whether the last call to the store (a tag-list read or a segment load) worked. */
  private reachable: boolean | undefined;
  /** Why the last call failed, while the store is unreachable. */
  private failure: StoreFailure | undefined;
  /** The store as the buffers see it: every advance also tells whether the store answered. */
  private readonly tracked: SegmentStore;

  constructor(
    /** The store as given, so that the server reaches its tag catalogue through the same object. */
    readonly store: S,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly options: SegmentAllocatorOptions = DEFAULT_SEGMENT_ALLOCATOR_OPTIONS,
    private readonly observer: CoreObserver = NO_CORE_OBSERVER,
  ) {
    this.tracked = {
      description: store.description,
      advance: async (tag, step) => {
        try {
          const allocation = await store.advance(tag, step);
          this.markReachable(true);
          return allocation;
        } catch (error) {
          this.markReachable(false, error);
          throw error;
        }
      },
      close: () => store.close(),
    };
  }

  /** Reads the tag list once (a failure is logged, not fatal) and starts the periodic refresh. */
  async start(): Promise<void> {
    await this.refresh();
    this.scheduleRefresh();
  }

  /**
   * The next ID of `tag` if one is buffered and the tag's segments are of kind `key` (`kindKey`:
   * `''` is plain), without waiting; `undefined` otherwise. The kind check is one string
   * comparison: a buffer never holds segments of two kinds (SegmentBuffer.kind).
   */
  tryNext(tag: string, key = ''): SegmentId | undefined {
    const buffer = this.buffers.get(tag);
    return buffer !== undefined && buffer.kindKey === key ? buffer.tryNext() : undefined;
  }

  /** The next ID of `tag`, of kind `key`; a tag of another kind rejects with KindChangedError. */
  next(tag: string, key = ''): Promise<SegmentId> {
    const id = this.tryNext(tag, key);
    if (id !== undefined) return Promise.resolve(id);
    return this.settle(tag, (b) => b.next(key));
  }

  nextMany(tag: string, count: number, key = ''): Promise<SegmentId[]> {
    return this.settle(tag, (b) => b.nextMany(count, key));
  }

  /** `count` IDs of `tag` as runs of consecutive IDs (`SegmentBuffer.grant`), of kind `key`. */
  grant(tag: string, count: number, key = ''): Promise<IdRun[]> {
    return this.settle(tag, (b) => b.grant(count, key));
  }

  /**
   * Drops the tag's buffer if it holds segments of kind `key`: a node that learned from the store
   * that the tag is of another kind now (a refused opaque tag read again) loads a fresh segment,
   * whose grant says the kind. What the buffer held is a gap.
   */
  dropIfKind(tag: string, key: string): void {
    const buffer = this.buffers.get(tag);
    if (buffer !== undefined && buffer.kindKey === key) this.buffers.delete(tag);
  }

  tags(): string[] {
    return [...this.buffers.keys()];
  }

  /** How many tags the node holds a buffer for. */
  get size(): number {
    return this.buffers.size;
  }

  /** The buffers themselves, for readers that walk every tag without building each state (`StatsSampler`). */
  buffersView(): IterableIterator<SegmentBuffer> {
    return this.buffers.values();
  }

  buffer(tag: string): SegmentBuffer | undefined {
    return this.buffers.get(tag);
  }

  states(): SegmentBufferState[] {
    return [...this.buffers.values()].map((buffer) => buffer.state());
  }

  /** Reads the tag list: new tags get an empty buffer, tags gone from the table are dropped. */
  async refresh(): Promise<void> {
    let tags: string[];
    try {
      tags = await this.store.listTags();
      this.markReachable(true);
    } catch (error) {
      this.markReachable(false, error);
      this.logger.log('warn', 'segment.refresh_failed', { error: describeError(error) });
      return;
    }
    // An empty answer changes nothing: emptying the table must not drop what is buffered (Leaf #204).
    if (tags.length === 0 || this.closed) return;
    const present = new Set(tags);
    for (const tag of tags) {
      // A formatted tag's counter (tag U+001F period) is served through its tag, on demand: no
      // buffer ahead of its first request, and no warning that its name is not a tag's.
      if (this.buffers.has(tag) || isCounterName(tag)) continue;
      const problem = tagProblem(tag);
      if (problem === undefined) {
        this.buffers.set(tag, this.createBuffer(tag));
      } else if (!this.unservable.has(tag)) {
        // Found now, by the operator reading the log, rather than by a client getting 400.
        if (this.unservable.size < MAX_MISSING_TAGS) this.unservable.add(tag);
        this.logger.log('warn', 'segment.tag_unservable', { tag, problem });
      }
    }
    for (const tag of this.buffers.keys()) {
      if (!present.has(tag)) {
        this.buffers.delete(tag);
        this.logger.log('info', 'segment.tag_dropped', { tag });
      }
    }
  }

  get storeReachable(): boolean {
    return this.reachable === true;
  }

  /** Why the store is unreachable: the error of the last call to it; undefined while it answers. */
  get storeFailure(): StoreFailure | undefined {
    return this.failure;
  }

  /** Logs the moments the database is lost and comes back, once each, not every failed call. */
  private markReachable(reachable: boolean, error?: unknown): void {
    this.failure = reachable
      ? undefined
      : {
          code: isFrondError(error) ? error.code : 'STORE_UNAVAILABLE',
          message: describeError(error),
          at: this.clock.now(),
        };
    if (reachable === this.reachable) return;
    const before = this.reachable;
    this.reachable = reachable;
    if (reachable && before === false)
      this.logger.log('info', 'store.back', { store: this.store.description });
    if (!reachable)
      this.logger.log('warn', 'store.lost', { store: this.store.description, error: describeError(error) });
  }

  close(): void {
    this.closed = true;
    this.cancelRefresh?.();
  }

  /**
   * A clean stop: every buffer stops serving at once (`SegmentBuffer.retire`), then each tag's
   * unused IDs (with `extra`) go to the store's hand-back, a few tags at a time, within
   * `timeoutMs` in all. Never rejects: a tag whose hand-back failed or did not finish in time is
   * listed in `failed` (what it held is then a crash for the next start to report).
   */
  async handBackAll(options: HandBackOptions = {}): Promise<HandBackSummary> {
    this.close();
    this.stopping = true;
    const deadline = this.clock.now() + (options.timeoutMs ?? 5_000);
    const summary: HandBackSummary = { tags: 0, handedBack: 0n, gaps: [], failed: [] };
    // Every buffer is stopped before the first hand-back waits on the store.
    const retiring = new Map([...this.buffers].map(([tag, buffer]) => [tag, buffer.retire()]));
    const tags = [...new Set([...retiring.keys(), ...(options.extra?.keys() ?? [])])];
    const handBack = this.store.handBack?.bind(this.store);
    const one = async (tag: string): Promise<void> => {
      // A load in flight is waited for within the bound too: a database that hangs on it (the
      // preload of the next segment) would otherwise hold the stop for the store's own timeout.
      const retire = retiring.get(tag);
      const settled = retire && (await within(this.clock, retire, Math.max(0, deadline - this.clock.now())));
      if (retire !== undefined && settled === undefined) {
        summary.tags++;
        summary.failed.push(tag);
        this.logger.log('warn', 'segment.hand_back_failed', {
          tag,
          error: 'a segment load still in flight at the end of the hand-back bound',
        });
        return;
      }
      const retired = settled?.value;
      const held = [...(options.extra?.get(tag) ?? []), ...(retired?.held ?? [])]
        .filter((range) => range.end > range.start)
        .sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
      const last = held[held.length - 1];
      // Nothing held and nothing granted: nothing to account for. Nothing held after a grant still
      // goes to the store, which then forgets the grants it kept for a crash report.
      if (last === undefined && retired === undefined) return;
      if (last !== undefined) summary.tags++;
      const remaining = deadline - this.clock.now();
      if (handBack === undefined || remaining <= 0) {
        if (last !== undefined) summary.failed.push(tag);
        return;
      }
      const to = retired?.to ?? (last as HeldRange).end;
      try {
        const settled = await within(this.clock, handBack(tag, held, to), remaining);
        if (settled === undefined)
          throw new FrondError('STORE_UNAVAILABLE', `no answer within ${remaining} ms`);
        const { returned, gaps } = settled.value;
        const back = returned === undefined ? 0n : returned.to - returned.from;
        summary.handedBack += back;
        summary.gaps.push(...gaps);
        if (back > 0n) this.observer.idsHandedBack(tag, back);
        for (const gap of gaps) this.observer.idsGivenUp(tag, gap.reason, gap.end - gap.start);
        this.logger.log('info', 'segment.handed_back', {
          tag,
          ...(returned === undefined ? {} : { from: returned.from.toString(), to: returned.to.toString() }),
          gaps: gapSize(gaps).toString(),
        });
      } catch (error) {
        summary.failed.push(tag);
        this.logger.log('warn', 'segment.hand_back_failed', { tag, error: describeError(error) });
      }
    };
    let next = 0;
    const worker = async () => {
      while (next < tags.length) await one(tags[next++] as string);
    };
    await Promise.all(Array.from({ length: Math.min(HAND_BACK_CONCURRENCY, tags.length) }, worker));
    this.logger.log(summary.failed.length > 0 ? 'warn' : 'info', 'segment.hand_back_summary', {
      tags: summary.tags,
      handedBack: summary.handedBack.toString(),
      gaps: gapSize(summary.gaps).toString(),
      failed: summary.failed.length,
    });
    return summary;
  }

  private async settle<T>(tag: string, take: (buffer: SegmentBuffer) => Promise<T>): Promise<T> {
    let buffer = this.buffers.get(tag);
    if (buffer === undefined) {
      if (this.stopping)
        throw new FrondError(
          'SEGMENT_UNAVAILABLE',
          `tag ${tag}: this node is stopping; retry on another node`,
        );
      const missingUntil = this.missing.get(tag);
      if (missingUntil !== undefined && missingUntil > this.clock.now()) throw tagNotFound(tag);
      buffer = this.createBuffer(assertServableName(tag));
      this.buffers.set(tag, buffer);
    }
    try {
      return await take(buffer);
    } catch (error) {
      if (isFrondError(error, 'TAG_NOT_FOUND')) this.forget(tag, buffer);
      // A buffer whose tag changed kind serves nothing more; the next call starts a new one.
      else if (buffer.retired && this.buffers.get(tag) === buffer) this.buffers.delete(tag);
      throw error;
    }
  }

  /**
   * Forgets that `tag` was found missing: its row was just created (a formatted tag's counter for
   * a new period), so the next call asks the store instead of answering TAG_NOT_FOUND from memory.
   */
  found(tag: string): void {
    this.missing.delete(tag);
  }

  private forget(tag: string, buffer: SegmentBuffer): void {
    if (this.buffers.get(tag) === buffer) this.buffers.delete(tag);
    if (this.missing.size >= MAX_MISSING_TAGS) this.missing.clear();
    this.missing.set(tag, this.clock.now() + this.options.missingTagTtlMs);
  }

  private createBuffer(tag: string): SegmentBuffer {
    // A formatted tag's counters are numbered as their tag is.
    const options = this.options.dense?.(parseCounterName(tag)?.tag ?? tag)
      ? { ...this.options, preloadBelowIdle: 0, dynamicStep: false }
      : this.options;
    return new SegmentBuffer(tag, this.tracked, this.clock, options, this.logger, this.observer);
  }

  private scheduleRefresh(): void {
    if (this.closed) return;
    this.cancelRefresh = this.clock.schedule(() => {
      void this.refresh().finally(() => this.scheduleRefresh());
    }, this.options.tagRefreshMs);
  }
}

/** Whether `name` is a formatted tag's counter (`counterName`): a row frond made, not a tag. */
export function isCounterName(name: string): boolean {
  return name.includes(COUNTER_SEPARATOR) && parseCounterName(name) !== undefined;
}

/**
 * A tag, or a formatted tag's counter (`tag` U+001F period key, src/core/id-format.ts), which is
 * taken through the same buffers; anything else is INVALID_TAG. The routes refuse counter names
 * themselves (TagIssuer): a counter is reached only through its tag.
 */
export function assertServableName(name: string): string {
  if (!name.includes(COUNTER_SEPARATOR)) return assertValidTag(name);
  const counter = parseCounterName(name);
  const problem = counter === undefined ? tagProblem(name) : tagProblem(counter.tag);
  if (problem !== undefined) throw invalidTag(name, problem);
  return name;
}
