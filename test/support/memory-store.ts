import { FrondError } from '../../src/core/errors.js';
import type { Allocation, NewTag, SegmentStore, TagRow } from '../../src/core/segment-store.js';

interface Pending {
  resolve: () => void;
  reject: (error: Error) => void;
  tag: string;
  step: number | undefined;
}

/**
 * An in-memory SegmentStore for unit tests of the core. With `manual = true`, each `advance` waits
 * until the test calls `release()` or `fail()`, so a test decides when a load finishes. The UPDATE
 * happens when the load is released, as a real transaction commits when it ends.
 */
export class MemoryStore implements SegmentStore {
  readonly description = 'memory:';
  readonly rows = new Map<string, { maxId: bigint; step: number }>();
  readonly calls: { tag: string; step: number | undefined }[] = [];
  private pending: Pending[] = [];

  constructor(public manual = false) {}

  get waiting(): number {
    return this.pending.length;
  }

  /** Finishes the oldest pending load. */
  release(): void {
    this.pending.shift()?.resolve();
  }

  /** Fails the oldest pending load with `error`. */
  fail(error: Error = new Error('connection refused')): void {
    this.pending.shift()?.reject(error);
  }

  async advance(tag: string, step?: number): Promise<Allocation | undefined> {
    this.calls.push({ tag, step });
    if (this.manual) {
      await new Promise<void>((resolve, reject) => this.pending.push({ resolve, reject, tag, step }));
    }
    const row = this.rows.get(tag);
    if (row === undefined) return undefined;
    const used = step ?? row.step;
    row.maxId += BigInt(used);
    return { maxId: row.maxId, step: used, tableStep: row.step };
  }

  async listTags(): Promise<string[]> {
    return [...this.rows.keys()];
  }

  async getTag(tag: string): Promise<TagRow | undefined> {
    const row = this.rows.get(tag);
    return row && { tag, maxId: row.maxId, step: row.step, description: null, updateTime: null };
  }

  async listRows(): Promise<TagRow[]> {
    return [...this.rows.keys()].map((tag) => {
      const row = this.rows.get(tag) as { maxId: bigint; step: number };
      return { tag, maxId: row.maxId, step: row.step, description: null, updateTime: null };
    });
  }

  async addTag(tag: NewTag): Promise<void> {
    if (this.rows.has(tag.tag)) throw new FrondError('TAG_EXISTS', `tag ${tag.tag} already exists`);
    this.rows.set(tag.tag, { maxId: tag.start, step: tag.step });
  }

  async setStep(tag: string, step: number): Promise<void> {
    const row = this.rows.get(tag);
    if (row === undefined) throw new FrondError('TAG_NOT_FOUND', `tag ${tag} has no row`);
    row.step = step;
  }

  async close(): Promise<void> {}
}
