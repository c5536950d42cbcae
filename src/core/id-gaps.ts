// The IDs a tag gives up for good: never issued after they were given up, never to be issued.
// Pure: the stores record gaps (frond_gaps), the core and the server say why.

/**
 * Why a range of a tag's IDs was given up:
 * - `crash`: a node held it when it stopped without handing it back (SIGKILL, a crash, or its
 *   database unreachable at the stop). Reported by that node's next start from its data dir, so
 *   it is an upper bound: some of its IDs may have been issued before the crash.
 * - `unsafe_hand_back`: a clean stop could not hand it back, because another node (or a Leaf
 *   server on the same table, or a fence) took IDs above it since.
 * - `opaque_look_ahead`: segment IDs an opaque tag had taken to encode ahead and never served, and
 *   that could not be handed back with the buffer's tail.
 * - `range_unused`: a client returned the unused part of a range it was granted (the SDK's close).
 * - `fence`: the IDs a fence skipped after a failover or restore; some may have been issued by the
 *   database that was lost, none after the fence.
 */
export type GapReason = 'crash' | 'unsafe_hand_back' | 'opaque_look_ahead' | 'range_unused' | 'fence';

export const GAP_REASONS: readonly GapReason[] = [
  'crash',
  'unsafe_hand_back',
  'opaque_look_ahead',
  'range_unused',
  'fence',
];

/** A range `[start, end)` of a tag's IDs given up, and why. */
export interface Gap {
  tag: string;
  start: bigint;
  end: bigint;
  reason: GapReason;
  /** Who gave it up: the node's name (host:port, or `fence`/`client` where no node held it). */
  node: string;
  /** When it was recorded, ms since the Unix epoch (the database's clock where it has one); 0 unknown. */
  at: number;
}

/** A range `[start, end)` a node holds unused at a clean stop, and the reason it becomes a gap if it cannot be handed back. */
export interface HeldRange {
  start: bigint;
  end: bigint;
  reason: Extract<GapReason, 'unsafe_hand_back' | 'opaque_look_ahead'>;
}

/** What a hand-back of one tag did. */
export interface HandBackResult {
  tag: string;
  /** max_id was lowered from `to` to `from`: the next grant starts at `from`. Undefined: nothing went back. */
  returned: { from: bigint; to: bigint } | undefined;
  /** The ranges recorded as gaps instead. */
  gaps: Gap[];
}

/**
 * `held` (ascending, not overlapping) split into the tail that may go back to the table (the
 * ranges that end at `to`, the max_id of this node's last grant, and run into one another without
 * a hole) and the rest, which other grants separate from `to` and so can only be recorded.
 */
export function splitHeld(
  held: readonly HeldRange[],
  to: bigint,
): { tail: { from: bigint; to: bigint } | undefined; rest: HeldRange[] } {
  const ranges = held.filter((range) => range.end > range.start);
  let from = to;
  let i = ranges.length;
  while (i > 0) {
    const range = ranges[i - 1] as HeldRange;
    if (range.end !== from) break;
    from = range.start;
    i--;
  }
  return { tail: from < to ? { from, to } : undefined, rest: ranges.slice(0, i) };
}

/** How many IDs `gaps` hold in all. */
export function gapSize(gaps: readonly Pick<Gap, 'start' | 'end'>[]): bigint {
  let total = 0n;
  for (const gap of gaps) total += gap.end - gap.start;
  return total;
}
