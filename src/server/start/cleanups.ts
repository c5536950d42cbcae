/**
 * What start-up has opened so far, each with how to close it: run in reverse when a later step
 * fails (an open store would keep a failed start alive) and when the node closes.
 */
export type Cleanups = (() => unknown)[];

/** Closes what was opened, the last first, each step awaited. */
export async function runCleanups(cleanups: Cleanups): Promise<void> {
  for (const step of cleanups.reverse()) await step();
}
