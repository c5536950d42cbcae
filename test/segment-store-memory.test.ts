import { describeHandBack } from './hand-back.suite.js';
import { describeSegmentStore, type FenceTable } from './segment-store.suite.js';
import type { MemoryRow } from './support/memory-store.js';
import { MemoryStore } from './support/memory-store.js';

// One map is one table: the suite's second store is a second connection to the same rows (and to
// the same frond tables, `tables`).
const rows = new Map<string, MemoryRow>();
const tables = new MemoryStore(false, rows);

/** `frond db fence` on the shared tables, and what a restore from before a name leaves of it. */
const fencing: FenceTable = {
  async fence(_t, skip) {
    await tables.primitive.fence({
      observedEpoch: Number.MAX_SAFE_INTEGER,
      aboveEpoch: 0,
      skip,
      atLeast: new Map(),
    });
  },
  async forget(_t, tag) {
    rows.delete(tag);
    tables.highWater.delete(tag);
    tables.opaque.delete(tag);
    tables.formats.delete(tag);
  },
  async hasFormat(_t, tag) {
    return tables.formats.has(tag);
  },
};

describeSegmentStore(
  'memory (test/support)',
  async () => new MemoryStore(false, rows, tables),
  undefined,
  fencing,
);

describeHandBack(
  'memory (test/support)',
  async () => {
    const store = new MemoryStore(false, rows, tables);
    return {
      ...store.primitive,
      addTag: (tag, opaque) => store.addTag(tag, opaque),
      tag: (tag) => store.tag(tag),
      listGaps: (tag, after, limit) => store.listGaps(tag, after, limit),
      gapTotals: () => store.gapTotals(),
    };
  },
  {
    async setMaxId(_t, tag, maxId) {
      const row = rows.get(tag);
      if (row !== undefined) row.maxId = maxId;
    },
    async deleteRow(_t, tag) {
      rows.delete(tag);
    },
    fence: fencing.fence as NonNullable<FenceTable['fence']>,
    forget: fencing.forget as NonNullable<FenceTable['forget']>,
  },
);
