import type { FrondErrorCode } from '../../core/errors.js';
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

/**
 * worker → primary: this worker serves (its store open, its worker ID taken, requests answered),
 * at `url`. node:cluster's own `listening` event comes earlier, when the worker binds the port,
 * which it does before anything else (listen.ts): a worker may still fail after it.
 */
export interface Serving {
  type: 'frond.serving';
  url: string;
}

/**
 * worker → primary: this worker's start failed, in the one line `frond` prints and with the code
 * that sets the exit code; the primary prints it for the node (once, however many workers fail).
 * `code` is undefined for an error that is not a FrondError (exit 1).
 */
export interface StartFailed {
  type: 'frond.start_failed';
  message: string;
  code: FrondErrorCode | undefined;
}

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
