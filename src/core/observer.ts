import type { GapReason } from './id-gaps.js';

/**
 * What the core reports as numbers, for metrics. Typed calls instead of log events, so that a
 * renamed log line cannot silently stop a metric. Counters the core keeps anyway (IDs issued, loads,
 * clock-backwards events) are read at scrape time instead and need no call here.
 */
export interface CoreObserver {
  /** A segment of `tag` was reserved in the store, which took `ms` milliseconds. */
  segmentLoaded(tag: string, ms: number): void;
  /** `count` IDs of `tag` were given up and recorded as gaps, for `reason` (id-gaps.ts). */
  idsGivenUp(tag: string, reason: GapReason, count: bigint): void;
  /** `count` IDs of `tag` went back to the table at a clean stop. */
  idsHandedBack(tag: string, count: bigint): void;
}

export const NO_CORE_OBSERVER: CoreObserver = { segmentLoaded() {}, idsGivenUp() {}, idsHandedBack() {} };
