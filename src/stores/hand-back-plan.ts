// What a store's hand-back transaction decides, once it has read the row, the fence row, the
// high-water record and the gaps already recorded near the range: pure, the same for every
// backend (the memory store's and the SQL stores'), so they cannot decide differently.
import { type Gap, type HeldRange, splitHeld } from '../core/id-gaps.js';
import type { HandBackRequest } from './segment-primitive.js';

/** What the transaction read, under the tag row's lock (SegmentPrimitive.handBack). */
export interface HandBackState {
  /** leaf_alloc's max_id of the tag; undefined: the row is gone. */
  maxId: bigint | undefined;
  /** frond_high_water's record of the tag; undefined: none. */
  recorded: bigint | undefined;
  /** Whether the fence row names this database at the request's epoch and identity. */
  fenceMatches: boolean;
  /** The gaps recorded for the tag that overlap [lowest held start, to), any order. */
  claimed: readonly { start: bigint; end: bigint }[];
}

export interface HandBackPlan {
  /** max_id (and the record, where there is one) goes from `to` down to `from`. */
  returned: { from: bigint; to: bigint } | undefined;
  /**
   * The row and the record are at the tail's first ID already: a MySQL deadlock's second attempt
   * after a rollback finds this only if another transaction made it so; nothing to write but the
   * gaps. Not a licence to retry after an unknown outcome: another node's grant since of exactly
   * the tail's size puts max_id back at `to`, which reads as "nobody granted since", and a second
   * call would hand that node's segment out again (SegmentPrimitive.handBack: never retried).
   */
  alreadyReturned: boolean;
  /** The ranges to insert into frond_gaps: none overlaps a gap already recorded. */
  gaps: { start: bigint; end: bigint; reason: HeldRange['reason'] }[];
}

/** The lowest ID `held` names (or `to` when it names none): the claimed gaps to read start below `to` and end above it. */
export function lowestHeld(request: Pick<HandBackRequest, 'held' | 'to'>): bigint {
  let low = request.to;
  for (const range of request.held) if (range.end > range.start && range.start < low) low = range.start;
  return low;
}

/**
 * The tail goes back only when nobody can have been granted IDs above it since: the fence row as
 * the grant saw it, the row's max_id still `to`, and the record no higher. Then the claimed guard:
 * a gap already recorded inside the tail (a client's unused range, a crash) is never handed back
 * under it, so the tail's first ID is raised to the highest end of those gaps. Everything not
 * handed back is recorded, minus what frond_gaps already holds: nothing recorded twice.
 */
export function planHandBack(request: HandBackRequest, state: HandBackState): HandBackPlan {
  const held = request.held.filter((range) => range.end > range.start);
  const { tail, rest } = splitHeld(held, request.to);
  let from = tail?.from;
  if (from !== undefined) {
    const start = from;
    for (const gap of state.claimed)
      if (gap.start < request.to && gap.end > start && gap.end > from) from = gap.end;
  }
  const fenceOk = state.maxId !== undefined && state.fenceMatches;
  const safe =
    fenceOk && state.maxId === request.to && (state.recorded === undefined || state.recorded <= request.to);
  // The row where a committed call of this same hand-back left it, with nothing moved since; no
  // caller retries (SegmentPrimitive.handBack), this only keeps a second call from recording the
  // tail as a gap.
  const already =
    !safe &&
    fenceOk &&
    from !== undefined &&
    from < request.to &&
    state.maxId === from &&
    (state.recorded === undefined || state.recorded === from);
  const back = (safe || already) && from !== undefined && from < request.to ? from : undefined;
  const kept =
    back === undefined
      ? held
      : [
          ...rest,
          ...held
            .filter((range) => !rest.includes(range))
            .map((range) => ({ ...range, end: lower(range.end, back) }))
            .filter((range) => range.end > range.start),
        ];
  return {
    returned: back === undefined ? undefined : { from: back, to: request.to },
    alreadyReturned: already && back !== undefined,
    gaps: kept.flatMap((range) => subtract(range, state.claimed)),
  };
}

/** The lower of two IDs (Math.min takes no bigint). */
function lower(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

/** `range` without the parts `claimed` covers, in order. */
function subtract(
  range: { start: bigint; end: bigint; reason: HeldRange['reason'] },
  claimed: readonly { start: bigint; end: bigint }[],
): { start: bigint; end: bigint; reason: HeldRange['reason'] }[] {
  let pieces = [range];
  for (const gap of claimed) {
    pieces = pieces.flatMap((piece) => {
      if (gap.end <= piece.start || gap.start >= piece.end) return [piece];
      const out = [];
      if (gap.start > piece.start) out.push({ ...piece, end: gap.start });
      if (gap.end < piece.end) out.push({ ...piece, start: gap.end });
      return out;
    });
  }
  return pieces.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
}

/** The plan's gaps as frond_gaps rows of `request.tag`, recorded at `at` (ms, the database's clock). */
export function gapsOf(request: HandBackRequest, plan: HandBackPlan, at: number): Gap[] {
  return plan.gaps.map((gap) => ({ tag: request.tag, ...gap, node: request.node, at }));
}
