import type { Track } from './tag-track.js';

/** `--metrics-tags`: 100 tags × ~10 series each keep a scrape near 100 KB. */
export const DEFAULT_METRICS_TAGS = 100;

/** Every this many samples (1 s each) the labelled set of `/metrics` is chosen again from the busiest. */
const RELABEL_SAMPLES = 60;

/** The series `/metrics` has per tag label. */
interface TagSeries {
  issued: number;
  loads: number;
  loadFailures: number;
  left: number;
  rate: number;
  /** The smallest runway (the tag that runs out first); null when none is being taken. */
  runwaySeconds: number | null;
  step: number;
  /** For `(other)`, 1 only when every one of its tags has its next segment. */
  nextReady: boolean;
}

/** The tags without a label of their own, added up for `tag="(other)"`. */
export interface OtherTags extends TagSeries {
  tags: number;
}

/** One labelled tag as `/metrics` reads it: counters from when it got its label. */
export interface LabelledTag extends TagSeries {
  tag: string;
}

/** What `/metrics` shows of the tags: the labelled ones, the rest added up, how many there are. */
export interface TagMetrics {
  tagCount: number;
  labelled: LabelledTag[];
  other: OtherTags | undefined;
}

export const emptyOther = (): OtherTags => ({
  tags: 0,
  issued: 0,
  loads: 0,
  loadFailures: 0,
  left: 0,
  rate: 0,
  runwaySeconds: null,
  step: 0,
  nextReady: true,
});

/**
 * Which tags have their own `tag` label in `/metrics` (at most `room`, `--metrics-tags`), and the
 * rest added up as `tag="(other)"`, so that a scrape reads ~`room` tags, never all of them.
 *
 * A labelled tag's counters count from when it got its label, and `(other)` keeps everything before
 * (and everything of a tag that loses its label): so every series only goes up, and the sum over
 * `tag` is the node's total. While the node holds at most `room` tags, a tag gets its label when
 * first seen, with its whole count (nothing of it was in `(other)`): every tag is labelled with its
 * full counts. With more, the free labels go to the busiest tags taking IDs, each second, and every
 * RELABEL_SAMPLES seconds the idlest labelled tags give theirs up to busier ones, so labels do not
 * flap.
 */
export class TagLabels {
  /** The tracks with a label, so that a scrape reads them without walking every tag. */
  private readonly members = new Set<Track>();
  private other: OtherTags = emptyOther();

  constructor(private readonly room: number) {}

  /**
   * A new track for a tag the node holds `tagCount` of: it takes over the label of `old`, the
   * tag's previous track (its buffer was replaced), counting from zero, or gets one of its own.
   */
  adopt(track: Track, old: Track | undefined, tagCount: number): void {
    track.label = old?.label && { issued: 0, loads: 0, loadFailures: 0 };
    if (old !== undefined && this.members.delete(old)) this.members.add(track);
    // New to the sampler, so none of its IDs were counted in (other): it may take its whole
    // count. Only while every tag fits: with more, the free labels are kept for the busiest.
    if (track.label === undefined && this.members.size < this.room && tagCount <= this.room) {
      track.label = { issued: 0, loads: 0, loadFailures: 0 };
      this.members.add(track);
    }
  }

  /** A tag gone from the node gives its label up. */
  drop(track: Track): void {
    this.members.delete(track);
  }

  /**
   * After a pass that added the unlabelled tags into `other` (`addToOther`): gives free labels to
   * the busiest taking IDs and every RELABEL_SAMPLES takes them from tags no longer among the
   * busiest, then keeps `other` for the scrapes until the next pass.
   */
  endPass(
    sample: number,
    busiest: readonly Track[],
    tracks: ReadonlyMap<string, Track>,
    other: OtherTags,
  ): void {
    this.relabel(sample, busiest, tracks, other);
    other.tags = tracks.size - this.members.size;
    this.other = other;
  }

  private relabel(
    sample: number,
    busiest: readonly Track[],
    tracks: ReadonlyMap<string, Track>,
    other: OtherTags,
  ): void {
    const room = this.room;
    const wanted = busiest.slice(0, room);
    if (sample % RELABEL_SAMPLES === 0 && tracks.size > room) {
      const keep = new Set(wanted.filter((track) => track.rate > 0 || track.label !== undefined));
      const taking = wanted.filter((track) => track.label === undefined && track.rate > 0).length;
      let freed = 0;
      // Only as many labels move as there are busy tags without one, the idlest labelled first.
      const labelled = [...this.members].filter((track) => !keep.has(track));
      labelled.sort((a, b) => a.rate - b.rate);
      for (const track of labelled) {
        if (freed >= taking) break;
        const base = track.label as NonNullable<Track['label']>;
        // Its counts since it got the label go back to (other), which so never goes down.
        other.issued += track.buffer.issued - base.issued;
        other.loads += track.buffer.loadCount - base.loads;
        other.loadFailures += track.buffer.loadFailureCount - base.loadFailures;
        track.label = undefined;
        this.members.delete(track);
        freed++;
      }
    }
    // When every tag fits, every tag has a label, idle or not.
    const fits = tracks.size <= room;
    for (const track of fits ? tracks.values() : wanted) {
      if (this.members.size >= room) break;
      if (track.label !== undefined || (!fits && track.rate <= 0)) continue;
      // (other) has its counts so far and keeps them; the label counts from here on.
      track.label = {
        issued: track.buffer.issued,
        loads: track.buffer.loadCount,
        loadFailures: track.buffer.loadFailureCount,
      };
      this.members.add(track);
      // Out of the sums for the rest of this second (clamped: rates are floats).
      other.left = Math.max(0, other.left - track.buffer.left);
      other.rate = Math.max(0, other.rate - track.rate);
    }
  }

  /** The labelled tags, read now, and the rest added up at the last pass: what `/metrics` shows. */
  tagMetrics(tagCount: number): TagMetrics {
    const labelled: LabelledTag[] = [];
    for (const track of this.members) {
      const base = track.label;
      if (base === undefined) continue;
      const buffer = track.buffer;
      const left = buffer.left;
      labelled.push({
        tag: track.tag,
        issued: buffer.issued - base.issued,
        loads: buffer.loadCount - base.loads,
        loadFailures: buffer.loadFailureCount - base.loadFailures,
        left,
        rate: track.rate,
        runwaySeconds: track.rate > 0 ? left / track.rate : null,
        step: buffer.dynamicStep,
        nextReady: buffer.nextReady,
      });
    }
    return {
      tagCount,
      labelled,
      other: this.other.tags > 0 ? this.other : undefined,
    };
  }
}

/**
 * Adds a sampled tag into this pass's `other`: an unlabelled tag all of it, a labelled one the
 * counts it had when it got its label (those stay in `(other)`, so that it never goes down).
 */
export function addToOther(other: OtherTags, track: Track, issued: number): void {
  if (track.label === undefined) addOther(other, track, issued);
  else {
    other.issued += track.label.issued;
    other.loads += track.label.loads;
    other.loadFailures += track.label.loadFailures;
  }
}

function addOther(other: OtherTags, track: Track, issued: number): void {
  const buffer = track.buffer;
  const left = buffer.left;
  other.issued += issued;
  other.loads += buffer.loadCount;
  other.loadFailures += buffer.loadFailureCount;
  other.left += left;
  other.rate += track.rate;
  if (track.rate > 0) {
    const runway = left / track.rate;
    if (other.runwaySeconds === null || runway < other.runwaySeconds) other.runwaySeconds = runway;
  }
  if (buffer.dynamicStep > other.step) other.step = buffer.dynamicStep;
  if (!buffer.nextReady) other.nextReady = false;
}
