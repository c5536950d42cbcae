import { closedError } from './errors.js';

export interface BackoffOptions {
  /** The delay cap of the first round, in ms. */
  initialMs: number;
  /** The delay cap never grows past this, in ms. */
  maxMs: number;
}

/**
 * The pause before retry round `round` (0, 1, 2, …): the cap doubles each round up to `maxMs`, and
 * the delay is drawn from the upper half of the cap ("equal jitter"), so clients that failed together
 * spread out, yet every client still waits at least half the cap. With the defaults (50 ms, 1 s):
 * 25–50, 50–100, 100–200, 200–400, 400–800, 500–1000 ms.
 */
export function backoffDelay(round: number, options: BackoffOptions, random: () => number): number {
  const cap = Math.min(options.maxMs, options.initialMs * 2 ** round);
  return Math.round(cap / 2 + random() * (cap / 2));
}

/** Resolves after `ms`, or rejects with CLIENT_CLOSED as soon as `signal` aborts (the timer is cleared). */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(closedError());
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(closedError());
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
