import type { Clock } from '../../src/core/clock.js';

/** A clock that moves only when told to; timers fire as `advance` passes their time. */
export class ManualClock implements Clock {
  private timers: { at: number; fn: () => void; id: number }[] = [];
  private nextId = 0;

  constructor(private time = 1_700_000_000_000) {}

  now(): number {
    return this.time;
  }

  /** Sets the time, forwards or backwards, without firing timers. */
  set(time: number): void {
    this.time = time;
  }

  schedule(fn: () => void, ms: number): () => void {
    const id = this.nextId++;
    this.timers.push({ at: this.time + ms, fn, id });
    return () => {
      this.timers = this.timers.filter((timer) => timer.id !== id);
    };
  }

  /** Moves forward by `ms`, firing due timers in order, and lets promise callbacks run. */
  async advance(ms: number): Promise<void> {
    const target = this.time + ms;
    for (let guard = 0; guard < 10_000; guard++) {
      const due = this.timers.filter((timer) => timer.at <= target).sort((a, b) => a.at - b.at)[0];
      if (due === undefined) break;
      this.timers = this.timers.filter((timer) => timer !== due);
      this.time = Math.max(this.time, due.at);
      due.fn();
      await settle();
    }
    this.time = target;
    await settle();
  }

  get pendingTimers(): number {
    return this.timers.length;
  }
}

/** Lets every queued promise callback run (a few macrotask turns). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
