/**
 * Runs every target once per round, in the same order each round (A B C A B C …), so that a change
 * in the machine's load during the run (other processes, CPU frequency) falls on all of them alike.
 */
export async function alternate<T, R>(
  targets: readonly T[],
  rounds: number,
  run: (target: T, round: number) => Promise<R>,
): Promise<Map<T, R[]>> {
  const results = new Map<T, R[]>(targets.map((target) => [target, []]));
  for (let round = 0; round < rounds; round++) {
    for (const target of targets) results.get(target)?.push(await run(target, round));
  }
  return results;
}

/** The run whose `key` is the median of the runs (for an even count, the lower middle one). */
export function medianRun<R>(runs: readonly R[], key: (run: R) => number): R {
  const sorted = [...runs].sort((a, b) => key(a) - key(b));
  const middle = sorted[(sorted.length - 1) >> 1];
  if (middle === undefined) throw new Error('no runs');
  return middle;
}
