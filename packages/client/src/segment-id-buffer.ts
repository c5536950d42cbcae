import { type BufferOptions, IdBuffer } from './id-buffer.js';
import type { IdSource } from './id-source.js';
import type { IdConverters } from './id-type.js';
import type { SegmentRuns } from './segment-runs.js';

/**
 * The next batch is fetched once this fraction of the current one is used: Leaf's 10%, as on the
 * server. With batches sized to last about a second, the fetch has ~0.9 s to arrive.
 */
const PREFETCH_AFTER_USED = 0.1;

/**
 * The double buffer of one tag in the client: the current batch is served from two numbers (the
 * next ID and the end of its run), the next batch is fetched in the background, and taking an ID is
 * a comparison and an increment. IDs taken from one buffer are strictly increasing per server, and
 * each buffered ID is handed out at most once: a run only moves forward.
 */
export class SegmentIdBuffer<Id> extends IdBuffer<Id, SegmentRuns> {
  // The current run, in plain fields because `tryTake` reads them for every ID. A run of safe
  // integers holds the IDs themselves; a run beyond ±(2^53 − 1) offsets from `base` (segment-runs.ts).
  private value = 0;
  private end = 0;
  private base: bigint | undefined;
  /** A formatted tag's batch: its numbers, which `value` is the position in (segment-runs.ts). */
  private texts: string[] | undefined;
  /** The current batch; runs from `runIndex` on are still to come. */
  private runs: number[] = [];
  private bases: (bigint | undefined)[] = [];
  private runIndex = 0;
  private batchCount = 0;

  constructor(
    readonly tag: string,
    private readonly source: IdSource,
    private readonly converters: Pick<IdConverters<Id>, 'fromSafeInteger' | 'fromBigInt'>,
    options: BufferOptions,
  ) {
    super(options);
    this.convert = converters.fromSafeInteger;
  }

  private readonly convert: (id: number) => Id;

  tryTake(): Id | undefined {
    const id = this.value;
    if (id < this.end) {
      this.value = id + 1;
      if (id >= this.prefetchAt) this.prefetch();
      const texts = this.texts;
      // A formatted tag's number is a string, whatever the idType (docs in the client's README).
      if (texts !== undefined) return texts[id] as Id;
      const base = this.base;
      return base === undefined ? this.convert(id) : this.converters.fromBigInt(base + BigInt(id));
    }
    return this.nextRun() ? this.tryTake() : undefined;
  }

  protected takeInto(out: Id[], count: number): void {
    while (out.length < count) {
      let id = this.value;
      const end = Math.min(this.end, id + (count - out.length));
      if (id < end) {
        const base = this.base;
        const texts = this.texts;
        if (texts !== undefined) for (; id < end; id++) out.push(texts[id] as Id);
        else if (base === undefined) for (; id < end; id++) out.push(this.convert(id));
        else for (; id < end; id++) out.push(this.converters.fromBigInt(base + BigInt(id)));
        this.value = end;
        if (end - 1 >= this.prefetchAt) this.prefetch();
      } else if (!this.nextRun()) {
        return;
      }
    }
  }

  protected held(): number {
    let held = this.end - this.value;
    for (let i = this.runIndex; i < this.runs.length; i += 2)
      held += (this.runs[i + 1] ?? 0) - (this.runs[i] ?? 0);
    return held + (this.nextBatch?.count ?? 0);
  }

  /**
   * The IDs granted to this buffer and not handed out, as runs `[start, end)` ascending: the rest
   * of the current run, the runs after it and the next batch. None for a formatted tag (its
   * numbers are text). Read before `close`, which drops them.
   */
  unused(): { start: bigint; end: bigint }[] {
    if (this.texts !== undefined) return [];
    const out: { start: bigint; end: bigint }[] = [];
    const add = (start: number, end: number, base: bigint | undefined) => {
      if (end <= start) return;
      const from = base === undefined ? BigInt(start) : base + BigInt(start);
      const to = base === undefined ? BigInt(end) : base + BigInt(end);
      const last = out[out.length - 1];
      if (last !== undefined && last.end === from) last.end = to;
      else out.push({ start: from, end: to });
    };
    add(this.value, this.end, this.base);
    for (let i = this.runIndex; i < this.runs.length; i += 2)
      add(this.runs[i] as number, this.runs[i + 1] as number, this.bases[i / 2]);
    const next = this.nextBatch;
    if (next !== undefined && next.texts === undefined)
      for (let i = 0; i < next.runs.length; i += 2)
        add(next.runs[i] as number, next.runs[i + 1] as number, next.bases[i / 2]);
    return out;
  }

  protected load(count: number): Promise<SegmentRuns> {
    return this.source.segment(this.tag, count);
  }

  protected countOf(batch: SegmentRuns): number {
    return batch.count;
  }

  protected hasCurrent(): boolean {
    return this.value < this.end || this.runIndex < this.runs.length;
  }

  protected clear(): void {
    this.value = 0;
    this.end = 0;
    this.base = undefined;
    this.texts = undefined;
    this.runs = [];
    this.bases = [];
    this.runIndex = 0;
    this.nextBatch = undefined;
  }

  /** Moves to the next run of the batch, or to the next batch; false when neither is there. */
  private nextRun(): boolean {
    if (this.runIndex < this.runs.length) {
      this.value = this.runs[this.runIndex] as number;
      this.end = this.runs[this.runIndex + 1] as number;
      this.base = this.bases[this.runIndex / 2];
      this.runIndex += 2;
      this.armPrefetch();
      return true;
    }
    const batch = this.nextBatch;
    if (batch === undefined) return false;
    this.nextBatch = undefined;
    this.install(batch);
    return true;
  }

  protected install(batch: SegmentRuns): void {
    this.runs = batch.runs;
    this.bases = batch.bases;
    this.texts = batch.texts;
    this.runIndex = 0;
    this.batchCount = batch.count;
    this.nextRun();
  }

  /** Sets `prefetchAt` to the ID after which less than 90% of the batch is left (maybe in a later run). */
  private armPrefetch(): void {
    if (this.fetching || this.nextBatch !== undefined || this.closed) {
      this.prefetchAt = Number.POSITIVE_INFINITY;
      return;
    }
    let later = 0;
    for (let i = this.runIndex; i < this.runs.length; i += 2)
      later += (this.runs[i + 1] ?? 0) - (this.runs[i] ?? 0);
    const keep = Math.floor(this.batchCount * (1 - PREFETCH_AFTER_USED));
    // After taking ID x, (end - x - 1) + later are left: below `keep` from x = end + later - keep on.
    // At or past `end`, the mark lies in a later run and is set again when that run starts.
    this.prefetchAt = this.end + later - keep;
  }
}
