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
