import { describeSegmentStore } from './segment-store.suite.js';
import type { MemoryRow } from './support/memory-store.js';
import { MemoryStore } from './support/memory-store.js';

// One map is one table: the suite's second store is a second connection to the same rows (and to
// the same frond tables, `tables`).
const rows = new Map<string, MemoryRow>();
const tables = new MemoryStore(false, rows);
describeSegmentStore('memory (test/support)', async () => new MemoryStore(false, rows, tables));
