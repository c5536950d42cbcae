import { frondDataDir } from './http.js';
import { type ChildServer, startFrondServer } from './lib/child-server.js';
import { withCpu } from './lib/cpu.js';
import { type Section, table } from './lib/markdown.js';
import { alternate } from './lib/rounds.js';
import { saturate } from './lib/saturate.js';
import { median, ms, percent, si } from './lib/stats.js';

export interface WorkersOptions {
  rounds: number;
  runS: number;
  connections: number;
  warmupS: number;
  /** Only the first endpoints of PATHS (quick mode). */
  endpoints: number;
}

export interface WorkersSummary {
  /** Requests/s of the Leaf segment endpoint with 1 and 2 workers. */
  leafSegment: [number, number];
  batchSegmentIds: [number, number];
  errors: number;
}

const PATHS = [
  ['Leaf segment, 1 ID', '/api/segment/get/bench', 1],
  ['Leaf snowflake, 1 ID', '/api/snowflake/get/bench', 1],
  ['`/v1/segment/bench?count=1000`', '/v1/segment/bench?count=1000', 1000],
] as const;

interface Target {
  server: ChildServer;
  workers: number;
  path: (typeof PATHS)[number];
}

/** `frond serve` and `frond serve --workers 2`, side by side, alternating, at saturation. */
export async function runWorkers(
  options: WorkersOptions,
): Promise<{ section: Section; summary: WorkersSummary }> {
  const one = await startFrondServer('frond', ['--port', '0', '--data-dir', await frondDataDir()]);
  const two = await startFrondServer('frond --workers 2', [
    '--port',
    '0',
    '--data-dir',
    await frondDataDir(),
    '--workers',
    '2',
  ]);
  try {
    const targets: Target[] = PATHS.slice(0, options.endpoints).flatMap((path) => [
      { server: one, workers: 1, path },
      { server: two, workers: 2, path },
    ]);
    if (options.warmupS > 0)
      for (const target of targets)
        await saturate(`${target.server.url}${target.path[1]}`, {
          connections: options.connections,
          durationS: options.warmupS,
        });
    const runs = await alternate(targets, options.rounds, async (target) => {
      const { value, cores } = await withCpu(target.server.pid, () =>
        saturate(`${target.server.url}${target.path[1]}`, {
          connections: options.connections,
          durationS: options.runS,
        }),
      );
      return { ...value, cores };
    });
    const rps = (target: Target | undefined) =>
      median((runs.get(target as Target) ?? []).map((run) => run.requestsPerSecond));
    const find = (workers: number, index: number) =>
      targets.find((target) => target.workers === workers && target.path === PATHS[index]);
    const summary: WorkersSummary = {
      leafSegment: [rps(find(1, 0)), rps(find(2, 0))],
      batchSegmentIds: [rps(find(1, 2)) * 1000, rps(find(2, 2)) * 1000],
      errors: [...runs.values()].flat().reduce((sum, run) => sum + run.errors, 0),
    };
    return {
      summary,
      section: {
        title: 'Workers: `frond serve` vs `frond serve --workers 2`',
        method: `Both nodes run side by side (SQLite, one tag); each endpoint is loaded at saturation with autocannon (${options.connections} connections, ${options.runS} s), alternating between the two nodes in ${options.rounds} rounds; medians. Server CPU counts the primary and its workers.`,
        table: table(
          ['Endpoint', 'Workers', ' Requests/s', ' IDs/s', ' vs 1 worker', ' p99 (ms)', ' Server CPU'],
          targets.map((target) => {
            const list = runs.get(target) ?? [];
            const base = rps(find(1, PATHS.indexOf(target.path)));
            return [
              target.path[0],
              String(target.workers),
              si(rps(target)),
              si(rps(target) * target.path[2]),
              percent(rps(target) / base),
              ms(median(list.map((run) => run.latency.p99))),
              percent(median(list.map((run) => run.cores))),
            ];
          }),
        ),
        notes: [
          'This machine has 2 cores and the load generator needs one of them, so a second worker mostly competes with it; on a machine with cores to spare, N workers serve up to N times one worker, and snowflake mode gets N × 4,096,000 IDs/s (N worker IDs).',
        ],
      },
    };
  } finally {
    await Promise.all([one.stop(), two.stop()]);
  }
}
