import { FrondError } from '../../src/core/errors.js';
import { type Allocation, MAX_SEGMENT_ID, rangeExhausted } from '../../src/core/segment-store.js';
import type { NewTag, OpaqueSetting, TagRow, TagStore } from '../../src/core/tag-admin.js';
import { PLAIN_KIND } from '../../src/core/tag-kind.js';
import type { FencedAdvance, FenceOps, FenceOutcome, FenceRequest } from '../../src/stores/fencing/fence.js';

interface Pending {
  resolve: () => void;
  reject: (error: Error) => void;
  tag: string;
  step: number | undefined;
}

/** A row as a test may set it directly; description and update time are optional there. */
export interface MemoryRow {
  maxId: bigint;
  step: number;
  description?: string | null;
  updateTime?: Date;
}

/**
 * An in-memory TagStore for unit tests of the core. With `manual = true`, each `advance` waits
 * until the test calls `release()` or `fail()`, so a test decides when a load finishes. The UPDATE
 * happens when the load is released, as a real transaction commits when it ends. Stores built on
 * the same `rows` map share one table, as two connections to one database do.
 */
export class MemoryStore implements TagStore, FenceOps {
  readonly description = 'memory:';
  readonly calls: { tag: string; step: number | undefined }[] = [];
  private pending: Pending[] = [];
  /** frond_tag_options. */
  readonly opaque = new Map<string, OpaqueSetting>();

  constructor(
    public manual = false,
    readonly rows = new Map<string, MemoryRow>(),
  ) {}

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
    // As the SQL stores: the check is part of the update, and a refusal leaves the row as it was.
    if (row.maxId > MAX_SEGMENT_ID - BigInt(used)) throw rangeExhausted(tag, row.maxId, used);
    row.maxId += BigInt(used);
    row.updateTime = new Date();
    const setting = this.opaque.get(tag);
    return {
      maxId: row.maxId,
      step: used,
      tableStep: row.step,
      kind: setting ? { opaque: { ...setting } } : PLAIN_KIND,
    };
  }

  /** frond_fence: one database that never fails over, so every advance is granted under epoch 1. */
  readonly singleCopy = true;
  private fenceRow = { epoch: 1, identity: 'memory' };

  async advanceFenced(tag: string, step?: number): Promise<FencedAdvance | undefined> {
    const allocation = await this.advance(tag, step);
    return allocation && { kind: 'granted', allocation, ...this.fenceRow };
  }

  async fence(request: FenceRequest): Promise<FenceOutcome> {
    if (this.fenceRow.epoch > request.observedEpoch) return { ...this.fenceRow, fenced: false, tags: 0 };
    for (const [tag, row] of this.rows) {
      row.maxId += request.skip;
      const floor = request.atLeast.get(tag);
      if (floor !== undefined && row.maxId < floor) row.maxId = floor;
    }
    this.fenceRow = { epoch: Math.max(this.fenceRow.epoch, request.aboveEpoch) + 1, identity: 'memory' };
    return { ...this.fenceRow, fenced: true, tags: this.rows.size };
  }

  async listTags(): Promise<string[]> {
    return this.sortedTags();
  }

  async getTag(tag: string): Promise<TagRow | undefined> {
    const row = this.rows.get(tag);
    return row && toTagRow(tag, row);
  }

  async listRows(): Promise<TagRow[]> {
    return this.sortedTags().map((tag) => toTagRow(tag, this.rows.get(tag) as MemoryRow));
  }

  async addTag(tag: NewTag): Promise<void> {
    if (this.rows.has(tag.tag)) throw new FrondError('TAG_EXISTS', `tag ${tag.tag} already exists`);
    this.rows.set(tag.tag, {
      maxId: tag.start,
      step: tag.step,
      description: tag.description ?? null,
      updateTime: new Date(),
    });
  }

  async setStep(tag: string, step: number): Promise<void> {
    const row = this.rows.get(tag);
    if (row === undefined) throw new FrondError('TAG_NOT_FOUND', `tag ${tag} has no row in leaf_alloc`);
    row.step = step;
    row.updateTime = new Date();
  }

  async tagOptions(tag: string): Promise<{ opaque: OpaqueSetting | null } | undefined> {
    return this.rows.has(tag) ? { opaque: this.opaque.get(tag) ?? null } : undefined;
  }

  async listOpaque(): Promise<Map<string, OpaqueSetting>> {
    return new Map(this.opaque);
  }

  async addOpaqueTag(tag: NewTag, opaque: OpaqueSetting): Promise<void> {
    if (this.opaque.has(tag.tag)) throw new FrondError('TAG_EXISTS', `tag ${tag.tag} already exists`);
    await this.addTag(tag);
    this.opaque.set(tag.tag, { ...opaque });
  }

  async close(): Promise<void> {}

  /** In biz_tag order, as the SQL stores' ORDER BY gives them. */
  private sortedTags(): string[] {
    return [...this.rows.keys()].sort();
  }
}

function toTagRow(tag: string, row: MemoryRow): TagRow {
  return {
    tag,
    maxId: row.maxId,
    step: row.step,
    description: row.description ?? null,
    updateTime: row.updateTime ?? null,
  };
}
