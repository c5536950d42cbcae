// frond's HTTP app and segment allocator over SQLite behind `withLatency` (bench/lib/latency-store.ts):
// the segment-boundary benchmark's server. Composed like `frond serve` (the fenced store and its
// data dir's journal, servedStore)
// (src/server/start/start-server.ts) minus snowflake mode, because `frond serve` has, rightly, no
// flag to slow its own database down.
//   node --import tsx bench/servers/latency-server.ts DATA_DIR LATENCY_MS STEP
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { systemClock } from '../../src/core/clock.js';
import type { Logger } from '../../src/core/logger.js';
import { DEFAULT_SEGMENT_ALLOCATOR_OPTIONS, SegmentAllocator } from '../../src/core/segment-allocator.js';
import { LEAF_STEP_RULES } from '../../src/core/segment-step.js';
import { LEAF_LAYOUT } from '../../src/core/snowflake-layout.js';
import { createApp } from '../../src/server/http/app.js';
import { servedStore } from '../../src/stores/fencing/served-store.js';
import { DEFAULT_FENCE_SKIP } from '../../src/stores/segment-primitive.js';
import { SqliteSegmentStore } from '../../src/stores/sqlite/sqlite-segment-store.js';
import { withLatency } from '../lib/latency-store.js';

const [dataDir = '.', latencyText = '0', stepText = '1000'] = process.argv.slice(2);
const step = Number(stepText);
const sqlite = new SqliteSegmentStore(join(dataDir, 'frond.db'));
if ((await sqlite.tag('bench')) === undefined) await sqlite.addTag({ tag: 'bench', step, start: 1n });
const store = servedStore(withLatency(sqlite, Number(latencyText)), {
  dataDir,
  fenceSkip: DEFAULT_FENCE_SKIP,
});

// Segment loads are printed, so the benchmark can count the boundaries each run crossed.
const logger: Logger = {
  log(level, event, fields) {
    if (level === 'debug') return;
    process.stdout.write(`${JSON.stringify({ level, event, ...fields })}\n`);
  },
};
const allocator = new SegmentAllocator(store, systemClock, logger, {
  ...DEFAULT_SEGMENT_ALLOCATOR_OPTIONS,
  // The step stays at `step`: Leaf's doubling would otherwise make segments long and boundaries rare.
  stepRules: { ...LEAF_STEP_RULES, maxStep: step },
});
await allocator.start();
const server = createServer(
  createApp({ segment: allocator, snowflake: undefined, layout: LEAF_LAYOUT, logger }),
);
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  logger.log('info', 'listening', { url: `http://127.0.0.1:${port}`, store: store.description });
});
process.once('SIGTERM', () => {
  allocator.close();
  server.close(() => void store.close().then(() => process.exit(0)));
  server.closeAllConnections();
});
