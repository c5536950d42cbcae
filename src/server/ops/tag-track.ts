import type { SegmentBuffer } from '../../core/segment-buffer.js';
import { RATE_WINDOW_S } from './stats-snapshot.js';

/** What the sampler keeps of one tag: its buffer, a ring of the last 11 issued counts, and its label base. */
export interface Track {
  tag: string;
  buffer: SegmentBuffer;
  ring: Float64Array;
  /** Next slot of `ring` to write, and how many are filled. */
  head: number;
  filled: number;
  rate: number;
  /** The sample that last saw the tag: a tag not seen by a full pass is gone from the node. */
  seen: number;
  /** Set while the tag has its own `tag` label in `/metrics`: its counts when it got it. */
  label: { issued: number; loads: number; loadFailures: number } | undefined;
}

/** A track for a buffer the sampler follows from now on; its label is the labels' to give. */
export function newTrack(buffer: SegmentBuffer): Track {
  return track(buffer, new Float64Array(RATE_WINDOW_S + 1));
}

/** A buffer the sampler has not seen yet, as an idle track to rank: no ring, no label. */
export function idleTrack(buffer: SegmentBuffer): Track {
  return track(buffer, new Float64Array(0));
}

function track(buffer: SegmentBuffer, ring: Float64Array): Track {
  return { tag: buffer.tag, buffer, ring, head: 0, filled: 0, rate: 0, seen: 0, label: undefined };
}

/** Writes `issued` into the ring and takes the rate over the window it holds; `sample` saw the tag. */
export function recordIssued(track: Track, issued: number, sample: number): void {
  const ring = track.ring;
  ring[track.head] = issued;
  track.head = (track.head + 1) % ring.length;
  if (track.filled < ring.length) track.filled++;
  // The oldest value of the window is at head once the ring is full, else at 0.
  const oldest = ring[track.filled === ring.length ? track.head : 0] as number;
  track.rate = track.filled < 2 ? 0 : (issued - oldest) / (track.filled - 1);
  track.seen = sample;
}

/** Busier first: a higher rate, then (on a tie, e.g. all idle) one that already has a label, then more issued. */
export function busier(a: Track, b: Track): boolean {
  if (a.rate !== b.rate) return a.rate > b.rate;
  const la = a.label !== undefined;
  if (la !== (b.label !== undefined)) return la;
  return a.buffer.issued > b.buffer.issued;
}
