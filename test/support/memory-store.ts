import { FrondError } from '../../src/core/errors.js';
import { parseCounterName } from '../../src/core/id-format.js';
import type { Gap, GapReason, HandBackResult, HeldRange } from '../../src/core/id-gaps.js';
import { type Allocation, MAX_SEGMENT_ID, rangeExhausted } from '../../src/core/segment-store.js';
import {
  type CataloguedStore,
  type FormatSetting,
  type GapTotal,
  type NewTag,
  type OpaqueSetting,
  opaqueNameUsed,
  type TagEntry,
  type TagRow,
  tagExists,
  tagNotFound,
} from '../../src/core/tag-catalogue.js';
import { kindOf } from '../../src/core/tag-kind.js';
import { formatRowNeeded, formatRowRemains, refuseFormatWithOpaque } from '../../src/stores/format-rules.js';
import { gapsOf, lowestHeld, planHandBack } from '../../src/stores/hand-back-plan.js';
import { NEW_NAMES, startsAfterFence } from '../../src/stores/new-names.js';
import type {
  FenceOutcome,
  FenceRequest,
  HandBackRequest,
  SegmentPrimitive,
} from '../../src/stores/segment-primitive.js';

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
 * An in-memory store for unit tests of the core and the server: the segment store as the core
 * sees one (`advance` → Allocation, as FencedStore answers) and a tag catalogue. `primitive` is the
 * same table as a backend's segment primitive, for tests of FencedStore. With `manual = true`, each
 * `advance` waits until the test calls `release()` or `fail()`, so a test decides when a load
 * finishes. The UPDATE happens when the load is released, as a real transaction commits when it
 * ends. Stores built on the same `rows` map share one table, as two connections to one database do.
 */
export class MemoryStore implements CataloguedStore {
  readonly description = 'memory:';
  readonly calls: { tag: string; step: number | undefined }[] = [];
  private pending: Pending[] = [];
  /** frond_tag_options. */
  readonly opaque: Map<string, OpaqueSetting>;
  /** frond_high_water: the highest max_id granted per tag, and the max_id of a removed tag. */
  readonly highWater: Map<string, bigint>;
  /** frond_tag_formats: a formatted tag's and each of its counters' format, kept for good. */
  readonly formats: Map<string, FormatSetting>;
  /** frond_fence's fenced_at (ms): set when the row is made (with the store) and by every fence. */
  readonly fenced: { atMs: number };

  constructor(
    public manual = false,
    readonly rows = new Map<string, MemoryRow>(),
    /** Another store's frond tables, so that two stores on one `rows` map share them too. */
    shared?: MemoryStore,
  ) {
    this.opaque = shared?.opaque ?? new Map();
    this.highWater = shared?.highWater ?? new Map();
    this.formats = shared?.formats ?? new Map();
    this.fenced = shared?.fenced ?? { atMs: Date.now() };
    this.fenceBox = shared?.fenceBox ?? { row: { epoch: 1, identity: 'memory' } };
    this.gaps = shared?.gaps ?? new Map();
  }

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
    // Recorded as the SQL stores record it; unlike them, the next advance goes on from the row even
    // when it is lower (a row a test lowers by hand), so the core's own checks can be tested.
    const recorded = this.highWater.get(tag);
    if (recorded === undefined || recorded < row.maxId) this.highWater.set(tag, row.maxId);
    const setting = this.opaque.get(tag);
    const format = this.formats.get(tag);
    return {
      maxId: row.maxId,
      step: used,
      tableStep: row.step,
      kind: kindOf(setting?.domain, setting?.keyCheck, format?.format, format?.timeZone),
    };
  }

  /**
   * frond_fence: one database that never fails over, so every advance is granted under epoch 1
   * until a fence; shared, as the other frond tables, by stores on the same tables.
   */
  private readonly fenceBox: { row: { epoch: number; identity: string } };

  private get fenceRow(): { epoch: number; identity: string } {
    return this.fenceBox.row;
  }

  /** The table as a backend's segment primitive: every advance granted under the fence row. */
  readonly primitive: SegmentPrimitive = {
    description: this.description,
    singleCopy: true,
    advance: async (tag, step) => {
      const allocation = await this.advance(tag, step);
      return allocation && { kind: 'granted', allocation, ...this.fenceRow };
    },
    fence: (request) => this.fence(request),
    handBack: async (request) => this.handBackTail(request),
    recordGaps: async (gaps) => this.recordGaps(gaps),
    close: () => this.close(),
  };

  /** frond_gaps, keyed by tag, start and end as the SQL stores' primary key. */
  readonly gaps: Map<string, Gap>;

  /** As the SQL stores: the tail goes back only if the fence row and the row are where the grant left them. */
  /** As FencedStore answers it: the primitive's hand-back under the one fence row. */
  async handBack(tag: string, held: readonly HeldRange[], to: bigint): Promise<HandBackResult> {
    return this.handBackTail({ tag, held, to, ...this.fenceRow, node: 'memory' });
  }

  private handBackTail(request: HandBackRequest): HandBackResult {
    const row = this.rows.get(request.tag);
    const recorded = this.highWater.get(request.tag);
    const low = lowestHeld(request);
    const claimed = [...this.gaps.values()].filter(
      (gap) => gap.tag === request.tag && gap.start < request.to && gap.end > low,
    );
    const plan = planHandBack(request, {
      maxId: row?.maxId,
      recorded,
      fenceMatches: request.epoch === this.fenceRow.epoch && request.identity === this.fenceRow.identity,
      claimed,
    });
    if (row !== undefined && plan.returned !== undefined && !plan.alreadyReturned) {
      row.maxId = plan.returned.from;
      row.updateTime = new Date();
      if (recorded !== undefined) this.highWater.set(request.tag, plan.returned.from);
    }
    const gaps = gapsOf(request, plan, Date.now());
    this.recordGaps(gaps);
    return { tag: request.tag, returned: plan.returned, gaps };
  }

  private recordGaps(gaps: readonly Gap[]): void {
    for (const gap of gaps) {
      const key = `${gap.tag}\u0000${gap.start}\u0000${gap.end}`;
      // Recorded at the table's clock, as the SQL stores' created_at.
      if (!this.gaps.has(key)) this.gaps.set(key, { ...gap, at: Date.now() });
    }
  }

  async listGaps(tag: string, after?: bigint, limit?: number): Promise<Gap[]> {
    const gaps = [...this.gaps.values()]
      .filter((gap) => gap.tag === tag && (after === undefined || gap.start > after))
      .sort((a, b) => (a.start === b.start ? (a.end < b.end ? -1 : 1) : a.start < b.start ? -1 : 1));
    return limit === undefined ? gaps : gaps.slice(0, limit);
  }

  async gapTotals(): Promise<Map<GapReason, GapTotal>> {
    const totals = new Map<GapReason, GapTotal>();
    for (const gap of this.gaps.values()) {
      const total = totals.get(gap.reason) ?? { ranges: 0, ids: 0n };
      total.ranges++;
      total.ids += gap.end - gap.start;
      totals.set(gap.reason, total);
    }
    return totals;
  }

  private async fence(request: FenceRequest): Promise<FenceOutcome> {
    if (this.fenceRow.epoch > request.observedEpoch) return { ...this.fenceRow, fenced: false, tags: 0 };
    // The new-names record, made where it is missing and raised below with the removed tags'
    // (src/stores/new-names.ts); a skip of 0 leaves it as it is.
    if (request.skip > 0n && !this.highWater.has(NEW_NAMES)) this.highWater.set(NEW_NAMES, 0n);
    const at = Date.now();
    for (const [tag, row] of this.rows) {
      const was = row.maxId;
      row.maxId += request.skip;
      const floor = request.atLeast.get(tag);
      if (floor !== undefined && row.maxId < floor) row.maxId = floor;
      // As the SQL stores: what the fence skipped of each tag is a gap, some of it maybe issued by
      // the database that was lost, none of it after the fence.
      if (row.maxId > was)
        this.recordGaps([{ tag, start: was, end: row.maxId, reason: 'fence', node: 'fence', at }]);
    }
    // A removed tag is raised as well (its record, as the SQL stores raise it).
    for (const [tag, recorded] of this.highWater) {
      if (this.rows.has(tag)) continue;
      const floor = request.atLeast.get(tag);
      const raised = recorded + request.skip;
      this.highWater.set(tag, floor !== undefined && floor > raised ? floor : raised);
    }
    this.fenceBox.row = { epoch: Math.max(this.fenceRow.epoch, request.aboveEpoch) + 1, identity: 'memory' };
    this.fenced.atMs = Date.now();
    return { ...this.fenceRow, fenced: true, tags: this.rows.size };
  }

  async listTags(): Promise<string[]> {
    return this.sortedTags();
  }

  async listRows(after?: string, limit?: number): Promise<TagRow[]> {
    const tags = this.sortedTags().filter((tag) => after === undefined || tag > after);
    return tags.slice(0, limit).map((tag) => toTagRow(tag, this.rows.get(tag) as MemoryRow));
  }

  async tag(tag: string): Promise<TagEntry | undefined> {
    const row = this.rows.get(tag);
    const format = this.formats.get(tag);
    return row && { ...toTagRow(tag, row), opaque: this.opaque.get(tag) ?? null, format: format ?? null };
  }

  async addTag(tag: NewTag, opaque?: OpaqueSetting): Promise<void> {
    refuseFormatWithOpaque(tag, opaque);
    const recorded = this.highWater.get(tag.tag);
    const { format } = tag;
    // As the SQL stores (format-rules.ts): the format's rules, or a format left without its row.
    const formatNeeded =
      format !== undefined &&
      formatRowNeeded(
        { ...tag, format },
        {
          row: this.rows.has(tag.tag),
          format: this.formats.get(tag.tag),
          served: recorded !== undefined,
          opaque: this.opaque.has(tag.tag),
        },
      );
    if (this.rows.has(tag.tag)) throw tagExists(tag.tag);
    if (format === undefined) {
      const kept = this.formats.get(tag.tag);
      if (kept !== undefined) throw formatRowRemains(tag.tag, kept);
      if (opaque !== undefined) {
        // As the SQL stores: a name that served IDs is refused as an opaque tag.
        if (recorded !== undefined) throw opaqueNameUsed(tag.tag);
        if (this.opaque.has(tag.tag)) throw tagExists(tag.tag);
      } else if (this.opaque.has(tag.tag)) {
        throw new FrondError('OPAQUE_TAG_FIXED', `tag ${tag.tag} was an opaque tag; use a new name`);
      }
    }
    // A removed tag goes on from its record; a name without one from the new-names record, but
    // for a counter whose period starts after the last fence (as the SQL stores).
    const own = startsAfterFence(tag, this.fenced.atMs);
    const floor = own ? recorded : (recorded ?? this.highWater.get(NEW_NAMES));
    const start = floor !== undefined && floor > tag.start ? floor : tag.start;
    if (own) this.highWater.set(tag.tag, start);
    this.rows.set(tag.tag, {
      maxId: start,
      step: tag.step,
      description: tag.description ?? null,
      updateTime: new Date(),
    });
    if (opaque !== undefined) this.opaque.set(tag.tag, { ...opaque });
    if (format !== undefined && formatNeeded) this.formats.set(tag.tag, { ...format });
  }

  async setStep(tag: string, step: number): Promise<void> {
    const row = this.rows.get(tag);
    if (row === undefined) throw tagNotFound(tag);
    row.step = step;
    row.updateTime = new Date();
  }

  async removeTag(tag: string): Promise<bigint> {
    const row = this.rows.get(tag);
    if (row === undefined) throw tagNotFound(tag);
    this.rows.delete(tag);
    // A counter's format row goes with it, as in the SQL stores; a tag's stays for good.
    if (parseCounterName(tag) !== undefined) this.formats.delete(tag);
    const recorded = this.highWater.get(tag);
    const kept = recorded !== undefined && recorded > row.maxId ? recorded : row.maxId;
    this.highWater.set(tag, kept);
    return kept;
  }

  /** The formatted tags' formats, without their counters'. */
  async listFormats(): Promise<Map<string, FormatSetting>> {
    return new Map([...this.formats].filter(([tag]) => parseCounterName(tag) === undefined));
  }

  async listOpaque(): Promise<Map<string, OpaqueSetting>> {
    return new Map(this.opaque);
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
