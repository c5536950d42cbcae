import { FrondClientError } from '../../src/errors.js';
import type { IdSource } from '../../src/id-source.js';
import type { SegmentRuns } from '../../src/segment-runs.js';

interface Pending {
  count: number;
  resolve: () => void;
}

/**
 * An in-memory IdSource: segment IDs from one counter (so any repeat is the buffer's fault), and
 * requests answered at once (`auto`) or held until `release()`, so a test decides when a batch lands.
 */
export class FakeSource implements IdSource {
  next = 1;
  /** The `count` of every segment request, in order. */
  readonly requests: number[] = [];
  /** Set to make the next requests fail with it. */
  failWith: FrondClientError | undefined;
  /** Leave a gap of this many IDs every `gapEvery` IDs inside a batch (a batch across segments). */
  gapEvery = 0;
  closed = false;
  private readonly held: Pending[] = [];

  constructor(private readonly auto = true) {}

  get pending(): number {
    return this.held.length;
  }

  async segment(_tag: string, count: number): Promise<SegmentRuns> {
    this.requests.push(count);
    if (!this.auto) await new Promise<void>((resolve) => this.held.push({ count, resolve }));
    if (this.closed) throw new FrondClientError('CLIENT_CLOSED', 'closed');
    if (this.failWith !== undefined) throw this.failWith;
    const runs: number[] = [];
    for (let left = count; left > 0; ) {
      const take = this.gapEvery > 0 ? Math.min(left, this.gapEvery) : left;
      runs.push(this.next, this.next + take);
      this.next += take + (this.gapEvery > 0 ? 7 : 0);
      left -= take;
    }
    return { runs, bases: runs.filter((_, i) => i % 2 === 0).map(() => undefined), count };
  }

  async snowflakes(count: number): Promise<string[]> {
    return Array.from({ length: count }, () => String(this.next++));
  }

  /** Answers the oldest held request (or all of them). */
  release(all = false): void {
    do this.held.shift()?.resolve();
    while (all && this.held.length > 0);
  }

  close(): void {
    this.closed = true;
    this.release(true);
  }
}

/** Lets setImmediate callbacks (the buffer's prefetch) and the promise jobs after them run. */
export async function turn(times = 1): Promise<void> {
  for (let i = 0; i < times; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** A clock the test moves by hand. */
export function manualClock(start = 1_000_000): { now: () => number; advance(ms: number): void } {
  let time = start;
  return {
    now: () => time,
    advance(ms: number) {
      time += ms;
    },
  };
}
