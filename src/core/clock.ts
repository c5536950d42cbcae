/**
 * Time is injected everywhere so that tests can move the clock back by 1 ms or 10 s. `now()` is
 * wall-clock milliseconds since 1970, as `Date.now()`; `schedule` is a timer. Timers keep the
 * process alive (a start-up that waits for the clock must not end the process with an empty event
 * loop), so every owner cancels its timers when it closes.
 */
export interface Clock {
  now(): number;
  /** Runs `fn` after `ms` milliseconds; the returned function cancels it. */
  schedule(fn: () => void, ms: number): () => void;
}

export const systemClock: Clock = {
  now: Date.now,
  schedule(fn, ms) {
    const timer = setTimeout(fn, ms);
    return () => clearTimeout(timer);
  },
};

export function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => {
    clock.schedule(resolve, ms);
  });
}

/**
 * Settles with `promise`, or with `undefined` once `ms` have passed, whichever comes first. The
 * timer is cancelled when the promise wins, so nothing is left running.
 */
export function within<T>(clock: Clock, promise: Promise<T>, ms: number): Promise<{ value: T } | undefined> {
  return new Promise((resolve, reject) => {
    const cancel = clock.schedule(() => resolve(undefined), ms);
    promise.then(
      (value) => {
        cancel();
        resolve({ value });
      },
      (error: unknown) => {
        cancel();
        reject(error);
      },
    );
  });
}

/**
 * Sleeps that can all be cut short at once, so that an owner that closes leaves no timer behind
 * and no caller waiting out a sleep that no longer matters.
 */
export class Sleeps {
  private readonly pending = new Set<() => void>();

  constructor(private readonly clock: Clock) {}

  /** Resolves after `ms`, or at once when `wakeAll` is called. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const stop = () => {
        cancel();
        this.pending.delete(stop);
        resolve();
      };
      const cancel = this.clock.schedule(stop, ms);
      this.pending.add(stop);
    });
  }

  wakeAll(): void {
    for (const stop of this.pending) stop();
  }
}
