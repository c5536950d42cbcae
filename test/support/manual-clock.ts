import type { Clock } from '../../src/core/clock.js';

/**
 * A clock that moves only when told to; timers fire as `advance` passes their time. Timers run on
 * elapsed time, as Node's do (they are monotonic): `set` moves the wall clock back or forth without
 * moving them, so a node whose clock steps back 30 s still sees its 500 ms timers fire.
 */
export class ManualClock implements Clock {
  private timers: { at: number; fn: () => void; id: number }[] = [];
  private nextId = 0;
  /** Elapsed time, which only `advance` moves. */
  private elapsed = 0;

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
    this.timers.push({ at: this.elapsed + ms, fn, id });
    return () => {
      this.timers = this.timers.filter((timer) => timer.id !== id);
    };
  }

  /** Moves forward by `ms`, firing due timers in order, and lets promise callbacks run. */
  async advance(ms: number): Promise<void> {
    const target = this.elapsed + ms;
    for (let guard = 0; guard < 10_000; guard++) {
      const due = this.timers.filter((timer) => timer.at <= target).sort((a, b) => a.at - b.at)[0];
      if (due === undefined) break;
      this.timers = this.timers.filter((timer) => timer !== due);
      if (due.at > this.elapsed) {
        this.time += due.at - this.elapsed;
        this.elapsed = due.at;
      }
      due.fn();
      await settle();
    }
    this.time += target - this.elapsed;
    this.elapsed = target;
    await settle();
  }

  /**
   * A view of this clock for one process: `crash()` drops every timer scheduled through it and
   * ignores later ones, as a SIGKILL ends a process's timers, so a crashed node records nothing more.
   */
  process(): Clock & { crash(): void } {
    const cancels = new Set<() => void>();
    let crashed = false;
    return {
      now: () => this.now(),
      schedule: (fn, ms) => {
        if (crashed) return () => {};
        const cancel = this.schedule(() => {
          cancels.delete(cancel);
          fn();
        }, ms);
        cancels.add(cancel);
        return () => {
          cancels.delete(cancel);
          cancel();
        };
      },
      crash: () => {
        crashed = true;
        for (const cancel of cancels) cancel();
        cancels.clear();
      },
    };
  }

  get pendingTimers(): number {
    return this.timers.length;
  }
}

/** Lets every queued promise callback run (a few macrotask turns). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
