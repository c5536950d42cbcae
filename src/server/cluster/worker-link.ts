import type { Worker } from 'node:cluster';
import { FrondError } from '../../core/errors.js';
import type { StatsQuery, StatsSnapshot } from '../ops/stats-snapshot.js';
import type { ClusterStatsSnapshot } from './cluster-stats.js';
import {
  type AggregateAsk,
  type Aggregated,
  COLLECT_TIMEOUT_MS,
  type Collect,
  type Collected,
  type Kind,
  type Serving,
} from './messages.js';

/** What a process has to add up: its own metrics (prom-client's JSON) and stats. */
export interface ClusterLocal {
  metrics(): Promise<object[]>;
  stats(query: StatsQuery): StatsSnapshot;
}

/**
 * A worker's line to the others, through the primary: `/metrics` and `/v1/stats` answer for the
 * whole node, whichever process takes the request, so they do not flap between processes.
 */
export interface ClusterLink {
  readonly index: number;
  /** Called once by `startServer` with this process's own numbers. */
  provide(local: ClusterLocal): void;
  /** Called by `startServer` once this process serves at `url`: the primary counts the node started when all do. */
  serving(url: string): void;
  /** Every process's metrics, added up by prom-client's cluster aggregator, as Prometheus text. */
  metricsText(): Promise<string>;
  stats(query?: StatsQuery): Promise<ClusterStatsSnapshot>;
}

/** The worker's side of `ClusterLink`. */
export function workerLink(worker: Worker, index: number): ClusterLink & { close(): void } {
  let local: ClusterLocal | undefined;
  let next = 0;
  const waiting = new Map<number, { resolve: (data: unknown) => void; reject: (error: Error) => void }>();
  const onMessage = (message: unknown) => {
    const typed = message as { type?: string } | undefined;
    if (typed?.type === 'frond.collect') {
      const { id, kind, query } = message as Collect;
      collectLocal(kind, query).then(
        (data) =>
          worker.isConnected() && worker.send({ type: 'frond.collected', id, data } satisfies Collected),
        () =>
          worker.isConnected() &&
          worker.send({ type: 'frond.collected', id, data: null } satisfies Collected),
      );
    } else if (typed?.type === 'frond.aggregated') {
      const answer = message as Aggregated;
      const pending = waiting.get(answer.id);
      waiting.delete(answer.id);
      if (answer.error !== undefined) pending?.reject(new FrondError('INTERNAL', answer.error));
      else pending?.resolve(answer.data);
    }
  };
  worker.on('message', onMessage);

  async function collectLocal(kind: Kind, query: StatsQuery | undefined): Promise<unknown> {
    if (local === undefined) return null;
    if (kind === 'stats') return local.stats(query ?? {});
    // The worker ID gauge is one per process: a `worker` label keeps them apart instead of a sum.
    const metrics = (await local.metrics()) as { name: string; values: { labels: object }[] }[];
    for (const metric of metrics) {
      if (metric.name !== 'frond_snowflake_worker_id') continue;
      for (const value of metric.values) value.labels = { ...value.labels, worker: String(index) };
    }
    return metrics;
  }

  const ask = (kind: Kind, query?: StatsQuery): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const id = next++;
      waiting.set(id, { resolve, reject });
      // The primary answers within COLLECT_TIMEOUT_MS; this bound only covers a primary that is gone.
      const timer = setTimeout(() => {
        if (!waiting.delete(id)) return;
        reject(new FrondError('SHUTTING_DOWN', 'the primary process did not answer'));
      }, COLLECT_TIMEOUT_MS * 3);
      timer.unref();
      worker.send({ type: 'frond.aggregate?', id, kind, query } satisfies AggregateAsk);
    });

  return {
    index,
    provide(own) {
      local = own;
    },
    serving(url) {
      if (worker.isConnected()) worker.send({ type: 'frond.serving', url } satisfies Serving);
    },
    async metricsText() {
      return (await ask('metrics')) as string;
    },
    async stats(query?: StatsQuery) {
      return (await ask('stats', query)) as ClusterStatsSnapshot;
    },
    close() {
      worker.off('message', onMessage);
    },
  };
}
