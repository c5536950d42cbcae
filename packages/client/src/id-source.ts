import type { SegmentRuns } from './segment-runs.js';

/**
 * Where batches come from. The HTTP client is one implementation (`HttpIdSource`); the buffers
 * build everything else on these two calls, so they work unchanged over any other source (as in
 * CosId, where the HTTP client is just another backend).
 */
export interface IdSource {
  /** `count` (1 to 100,000,000) increasing segment IDs of `tag`, as runs of consecutive IDs. */
  segment(tag: string, count: number): Promise<SegmentRuns>;
  /** `count` (1 to 10,000) snowflake IDs as decimal strings. */
  snowflakes(count: number): Promise<string[]>;
  /** Aborts requests in flight and pending retries; later calls reject with CLIENT_CLOSED. */
  close(): void;
  /**
   * Tells the server that `ranges` of `tag`, granted and never handed out, will not be used (the
   * client's close), within `timeoutMs`. Best effort: never rejects. Absent: nothing is returned.
   */
  returnUnused?(
    tag: string,
    ranges: readonly { start: bigint; end: bigint }[],
    timeoutMs: number,
  ): Promise<void>;
}
