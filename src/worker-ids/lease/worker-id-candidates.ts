import { MAX_WORKER_ID } from '../../core/snowflake-layout.js';

export interface CandidateInput {
  /** Worker IDs nobody may claim now: held by a live lease, or kept forever by Leaf-mode nodes. */
  taken: ReadonlySet<number>;
  /** The last timestamp recorded for each worker ID that was ever leased. */
  lastTimestamps: ReadonlyMap<number, number>;
  /** A node that lost its lease asks for its own worker ID back first. */
  preferred: number | undefined;
  /** The layout's largest worker ID (2^worker bits − 1); Leaf's 1023 when absent. */
  maxWorkerId?: number;
}

/**
 * The order in which a node tries to claim worker IDs: its `preferred` one if free, then free
 * worker IDs never leased (lowest first), then free ones leased before, earliest last timestamp
 * first, since the claimer waits until its clock passes that timestamp before issuing IDs.
 */
export function workerIdCandidates(input: CandidateInput): number[] {
  const max = input.maxWorkerId ?? MAX_WORKER_ID;
  const free: number[] = [];
  for (let id = 0; id <= max; id++) if (!input.taken.has(id)) free.push(id);
  const never = free.filter((id) => !input.lastTimestamps.has(id));
  const used = free
    .filter((id) => input.lastTimestamps.has(id))
    .sort(
      (a, b) => (input.lastTimestamps.get(a) as number) - (input.lastTimestamps.get(b) as number) || a - b,
    );
  const order = [...never, ...used];
  const preferred = input.preferred;
  if (preferred === undefined || input.taken.has(preferred) || preferred < 0 || preferred > max) return order;
  return [preferred, ...order.filter((id) => id !== preferred)];
}
