import { type BufferOptions, IdBuffer } from './id-buffer.js';
import type { IdSource } from './id-source.js';
import type { FromDecimal } from './id-type.js';

interface SnowflakeBatch {
  ids: string[];
  /** The IDs were minted after this instant (the fetch started), so they are at most this old. */
  fetchedAt: number;
}

/**
 * Snowflake IDs carry the time they were minted, so a buffered one gets older the longer it waits.
 * This buffer hands an ID out only while its batch is younger than `maxAgeMs` (older ones are
 * dropped: a gap, never a repeat), and sizes batches to last half that at the caller's rate. With
 * `maxAgeMs` 0 nothing is kept: each call (or group of concurrent calls) makes one request.
 */
export class SnowflakeIdBuffer<Id> extends IdBuffer<Id, SnowflakeBatch> {
  private ids: string[] = [];
  private index = 0;
  private expiresAt = 0;

  constructor(
    private readonly source: IdSource,
    private readonly convert: FromDecimal<Id>,
    private readonly maxAgeMs: number,
    options: BufferOptions,
  ) {
    super(options);
  }

  tryTake(): Id | undefined {
    const index = this.index;
    if (index < this.ids.length) {
      if (this.serving || this.options.now() < this.expiresAt) {
        this.index = index + 1;
        if (index >= this.prefetchAt) this.prefetch();
        return this.convert(this.ids[index] as string);
      }
      this.ids = [];
      this.index = 0;
    }
    return this.nextBatchIfFresh() ? this.tryTake() : undefined;
  }

  protected takeInto(out: Id[], count: number): void {
    while (out.length < count) {
      const id = this.tryTake();
      if (id === undefined) return;
      out.push(id);
    }
  }

  protected override targetMs(): number {
    return this.maxAgeMs / 2;
  }

  protected held(): number {
    return this.ids.length - this.index + (this.nextBatch?.ids.length ?? 0);
  }

  protected async load(count: number, startedAt: number): Promise<SnowflakeBatch> {
    return { ids: await this.source.snowflakes(count), fetchedAt: startedAt };
  }

  protected countOf(batch: SnowflakeBatch): number {
    return batch.ids.length;
  }

  protected hasCurrent(): boolean {
    return this.index < this.ids.length && this.options.now() < this.expiresAt;
  }

  protected clear(): void {
    this.ids = [];
    this.index = 0;
    this.nextBatch = undefined;
  }

  private nextBatchIfFresh(): boolean {
    const batch = this.nextBatch;
    if (batch === undefined) return false;
    this.nextBatch = undefined;
    if (this.options.now() >= batch.fetchedAt + this.maxAgeMs) return false;
    this.install(batch);
    return true;
  }

  protected install(batch: SnowflakeBatch): void {
    this.ids = batch.ids;
    this.index = 0;
    this.expiresAt = batch.fetchedAt + this.maxAgeMs;
    // A batch of one or two means a slow caller: a batch fetched ahead would likely age out unused.
    this.prefetchAt =
      this.maxAgeMs > 0 && batch.ids.length > 2 && !this.fetching
        ? Math.floor(batch.ids.length * 0.1)
        : Number.POSITIVE_INFINITY;
  }
}
