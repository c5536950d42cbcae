import type { StatsQuery } from '../ops/stats-snapshot.js';

/**
 * What the processes of a `--workers` node say to each other over the cluster's IPC channel: a
 * worker's place at start, and the asks and answers that add up metrics and stats.
 */

/** What the primary tells worker `index` before it starts (over the cluster's IPC channel). */
export interface Assignment {
  type: 'frond.assignment';
  index: number;
  /** The snowflake worker ID; undefined when snowflake mode is off. */
  workerId: number | undefined;
}

export const ASK = { type: 'frond.assignment?' };

export type Kind = 'metrics' | 'stats';
/** worker → primary: add up `kind` for me. */
export interface AggregateAsk {
  type: 'frond.aggregate?';
  id: number;
  kind: Kind;
  /** For `stats`: which tags (`/v1/stats?limit=…&tag=…`). */
  query?: StatsQuery | undefined;
}
/** primary → every worker: send me your `kind`; and the worker's answer. */
export interface Collect {
  type: 'frond.collect';
  id: number;
  kind: Kind;
  query?: StatsQuery | undefined;
}
export interface Collected {
  type: 'frond.collected';
  id: number;
  data: unknown;
}
/** primary → the asking worker: the sum. */
export interface Aggregated {
  type: 'frond.aggregated';
  id: number;
  data?: unknown;
  error?: string;
}

/** How long the primary waits for the processes' numbers; a process that is slower is left out. */
export const COLLECT_TIMEOUT_MS = 1_000;
