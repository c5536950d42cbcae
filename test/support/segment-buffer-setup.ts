import { silentLogger } from '../../src/core/logger.js';
import {
  DEFAULT_SEGMENT_BUFFER_OPTIONS,
  SegmentBuffer,
  type SegmentBufferOptions,
} from '../../src/core/segment-buffer.js';
import { ManualClock } from './manual-clock.js';
import { MemoryStore } from './memory-store.js';

/** One buffer of tag `orders` on a memory store (`manual`: loads wait to be released) and a manual clock. */
export function bufferSetup(
  step = 100,
  start = 1000n,
  options: Partial<SegmentBufferOptions> = {},
  manual = false,
) {
  const store = new MemoryStore(manual);
  store.rows.set('orders', { maxId: start, step });
  const clock = new ManualClock();
  const buffer = new SegmentBuffer(
    'orders',
    store,
    clock,
    { ...DEFAULT_SEGMENT_BUFFER_OPTIONS, ...options },
    silentLogger,
  );
  return { store, clock, buffer };
}
