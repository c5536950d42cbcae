import type { Worker } from 'node:cluster';
import { AggregatorRegistry } from 'prom-client';
import type { StatsSnapshot } from '../ops/stats-snapshot.js';
import { mergeStats } from './cluster-stats.js';
import {
  type AggregateAsk,
  type Aggregated,
  COLLECT_TIMEOUT_MS,
  type Collect,
  type Collected,
} from './messages.js';

/**
 * The primary's side of `ClusterLink` (worker-link.ts): asks every worker for its numbers, waits up
 * to COLLECT_TIMEOUT_MS, adds up what came and answers the asking worker.
 */
export function aggregateFor(
  workers: readonly Worker[],
  asker: Worker,
  ask: AggregateAsk,
  nextId: () => number,
): void {
  const id = nextId();
  const answers: unknown[] = [];
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    for (const worker of workers) worker.off('message', onMessage);
    const present = answers.filter((data) => data !== null && data !== undefined);
    const sum: Promise<unknown> =
      ask.kind === 'stats'
        ? Promise.resolve(mergeStats(present as StatsSnapshot[], ask.query))
        : AggregatorRegistry.aggregate(present as object[]).metrics();
    sum.then(
      (data) => {
        if (asker.isConnected())
          asker.send({ type: 'frond.aggregated', id: ask.id, data } satisfies Aggregated);
      },
      (error: unknown) => {
        if (asker.isConnected())
          asker.send({ type: 'frond.aggregated', id: ask.id, error: String(error) } satisfies Aggregated);
      },
    );
  };
  const onMessage = (message: unknown) => {
    const answer = message as Collected | undefined;
    if (answer?.type !== 'frond.collected' || answer.id !== id) return;
    answers.push(answer.data);
    if (answers.length === live.length) finish();
  };
  const live = workers.filter((worker) => worker.isConnected());
  const timer = setTimeout(finish, COLLECT_TIMEOUT_MS);
  for (const worker of live) {
    worker.on('message', onMessage);
    worker.send({ type: 'frond.collect', id, kind: ask.kind, query: ask.query } satisfies Collect);
  }
  if (live.length === 0) finish();
}
