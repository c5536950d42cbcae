import { FrondError, isFrondError, RetryLaterError } from '../../core/errors.js';
import {
  counterName,
  type IdFormat,
  type Period,
  periodAt,
  renderId,
  retryAfterSeconds,
} from '../../core/id-format.js';
import type { SegmentAllocator } from '../../core/segment-allocator.js';
import type { SegmentId } from '../../core/segment-buffer.js';
import { type CataloguedStore, tagNotFound } from '../../core/tag-catalogue.js';
import { KindChangedError, kindKey } from '../../core/tag-kind.js';

/**
 * Counter creations one take tries: a counter created, then removed by another node's clean-up
 * before this node took from it (a clock far ahead there), then created again. More is a bug.
 */
const CREATE_ATTEMPTS = 3;

/**
 * How far back the same period key can have happened before the stretch `periodAt` gives: where
 * the clocks go back by two hours (Antarctica/Troll, +02 to +00) the 01 hour happens at 23:00 UTC
 * and again at 01:00 UTC, one counter; 48 h covers a date line moved back a day. The stretches
 * before are walked one by one (an hour format: some 48 periodAt calls, once per period).
 */
const REPEAT_LOOKBACK_MS = 48 * 3_600_000;
/** More stretches than 48 h of 30-minute ones is a bug. */
const MAX_REPEAT_STRETCHES = 100;

/**
 * The first moment whose key is `period`'s, within REPEAT_LOOKBACK_MS: the start the fence rule
 * needs (new-names.ts startsAfterFence), since a counter serves from its key's first stretch.
 */
export function firstStartOf(format: IdFormat, period: Period): number {
  if (!Number.isFinite(period.startMs)) return period.startMs;
  let first = period.startMs;
  let t = period.startMs - 1;
  for (
    let stretch = 0;
    stretch < MAX_REPEAT_STRETCHES && t >= period.startMs - REPEAT_LOOKBACK_MS;
    stretch++
  ) {
    let earlier: Period;
    try {
      earlier = periodAt(format, t);
    } catch {
      return first; // before the year 1600: no earlier stretch to find
    }
    if (earlier.key === period.key && earlier.startMs < first) first = earlier.startMs;
    t = earlier.startMs - 1;
  }
  return first;
}

/**
 * One formatted tag on this node (docs/formats.md): numbers such as `ORD-20261201-000123`. Each
 * period of the format (a day, say, in the tag's zone) is numbered from its own counter, a
 * `leaf_alloc` row named `tag` U+001F period key, taken through the allocator's buffers like any
 * row; the counter is created on the first request of its period (by whichever node comes first).
 * The period is computed once and kept until the clock leaves it (`endMs`), so a request pays one
 * comparison. A batch never spans two periods: the period is fixed when the take starts.
 */
export class FormattedTag {
  private period: Period | undefined;
  private counter = '';
  /** The key of the period whose `{seq:N}` ran out: refused at once, no more IDs taken, until it ends. */
  private exhaustedKey: string | undefined;
  /** The kind (`kindKey`) of the tag and of every counter row: a segment of any other is refused. */
  readonly key: string;
  /** maxSeq as a number: a segment ID that is a number is at most 2^53, compared without a bigint. */
  private readonly maxSeqNumber: number;

  constructor(
    readonly tag: string,
    readonly format: IdFormat,
    private readonly segment: SegmentAllocator<CataloguedStore>,
    /** The node's clock (`Clock.now`). */
    private readonly now: () => number,
  ) {
    this.key = kindKey({ opaque: null, format: format.setting });
    this.maxSeqNumber = Number(format.maxSeq);
  }

  /** The period `nowMs` falls in: the kept one while the clock is inside it, else computed again. */
  periodAt(nowMs: number): Period {
    const kept = this.period;
    // A clock that went back uses the period it says: that counter still exists, or is created
    // again above its high-water (frond_high_water), so no number repeats.
    if (kept !== undefined && nowMs < kept.endMs && nowMs >= kept.startMs) return kept;
    const period = periodAt(this.format, nowMs);
    this.period = period;
    this.counter = counterName(this.tag, period.key);
    return period;
  }

  /** A number if one is buffered for the current period, without waiting; undefined otherwise. */
  tryNext(): string | undefined {
    const period = this.periodAt(this.now());
    if (this.exhaustedKey === period.key) return undefined;
    const seq = this.segment.tryNext(this.counter, this.key);
    if (seq === undefined) return undefined;
    // Past maxSeq: dropped; the slow path answers the refusal (next takes another, which is too).
    return this.within(seq) ? renderId(this.format, period, seq) : undefined;
  }

  async next(): Promise<string> {
    return (await this.nextMany(1))[0] as string;
  }

  async nextMany(count: number): Promise<string[]> {
    const now = this.now();
    const period = this.periodAt(now);
    const name = this.counter;
    if (this.exhaustedKey === period.key) throw this.exhausted(period, now);
    // More than a whole period holds can never be served: refused before any number is taken, or
    // the batch would take them all, drop them and use the period up for every client.
    if (count > this.maxSeqNumber)
      throw new FrondError(
        'INVALID_COUNT',
        `tag ${this.tag}: count ${count} is more than the ${this.format.maxSeq} numbers a period of ${this.format.setting.format} holds`,
      );
    const seqs = await this.take(name, count, period);
    const last = seqs[seqs.length - 1] as SegmentId;
    // The sequence only grows within a batch: if its last fits, all do.
    if (!this.within(last)) {
      // The numbers taken above maxSeq are dropped (never served); so are the few below it in the
      // same batch: a batch is all or nothing.
      this.exhaustedKey = period.key;
      throw this.exhausted(period, this.now());
    }
    const out = new Array<string>(seqs.length);
    for (let i = 0; i < seqs.length; i++) out[i] = renderId(this.format, period, seqs[i] as SegmentId);
    return out;
  }

  /** `count` sequence numbers of the counter `name`, created first if it has no row. */
  private async take(name: string, count: number, period: Period): Promise<SegmentId[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.segment.nextMany(name, count, this.key);
      } catch (error) {
        // A counter granted as another kind (its frond_tag_formats row changed by hand): the
        // segment is not served, and not kept either, so the row put right is seen at the next load.
        if (error instanceof KindChangedError) this.segment.dropIfKind(name, kindKey(error.kind));
        if (!isFrondError(error, 'TAG_NOT_FOUND') || attempt >= CREATE_ATTEMPTS) throw error;
      }
      await this.createCounter(name, period);
    }
  }

  /**
   * The counter's row, at the tag's step, starting at 1 (the store starts it above its high-water
   * if it served before: a clean-up removed it, or a clock went back past the retention; and at
   * the new-names floor if the period began before the last fence). Another
   * node creating it at the same time is fine (TAG_EXISTS).
   */
  private async createCounter(name: string, period: Period): Promise<void> {
    const store = this.segment.store;
    const anchor = await store.tag(this.tag);
    // The tag itself was removed: its counters are not served without it.
    if (anchor === undefined) throw tagNotFound(this.tag);
    try {
      await store.addTag({
        tag: name,
        step: anchor.step,
        start: 1n,
        description: `frond counter of ${this.tag}, period ${name.slice(this.tag.length + 1)}`,
        format: this.format.setting,
        // A period that starts over an hour after the database's last fence cannot have served
        // before it: its counter starts at 1, not at the floor the fence raised (new-names.ts).
        // Its key's first stretch, not this one: a repeated hour served from the same counter.
        periodStartMs: firstStartOf(this.format, period),
      });
    } catch (error) {
      if (!isFrondError(error, 'TAG_EXISTS')) throw error;
    }
    this.segment.found(name);
  }

  private within(seq: SegmentId): boolean {
    return typeof seq === 'number' ? seq <= this.maxSeqNumber : seq <= this.format.maxSeq;
  }

  private exhausted(period: Period, now: number): FrondError {
    const message = `tag ${this.tag}: period ${period.key} has used all ${this.format.maxSeq} numbers of ${this.format.setting.format}`;
    if (!Number.isFinite(period.endMs))
      return new FrondError('ID_RANGE_EXHAUSTED', `${message}; its format has no date, so no period follows`);
    const seconds = retryAfterSeconds(period, now);
    return new RetryLaterError(
      'ID_RANGE_EXHAUSTED',
      `${message}; the next period starts in ${seconds} s`,
      seconds,
    );
  }
}
