import { type ChildServer, startTsServer } from './lib/child-server.js';
import { type Section, table } from './lib/markdown.js';
import { pacedLoad } from './lib/paced-load.js';
import { alternate } from './lib/rounds.js';
import { saturate } from './lib/saturate.js';
import { integer, median, ms, si } from './lib/stats.js';
import { tempDir } from './lib/temp-dir.js';

export interface BoundaryOptions {
  rounds: number;
  fixedRate: number;
  runS: number;
  latencyMs: number;
  step: number;
  connections: number;
  warmupS: number;
}

interface Run {
  rate: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
  errors: number;
  duplicates: number;
  loads: number;
}

export interface BoundarySummary {
  /** p99.9 at the fixed rate with the added latency over the same without. */
  fixedRatio: number;
  fixedP999: number;
  fixedP999Baseline: number;
  saturatedRatio: number;
  duplicates: number;
  errors: number;
}

const loadsOf = (server: ChildServer) => server.events.get('segment.loaded') ?? 0;

/**
 * Two copies of frond's app over SQLite with a small fixed step, one behind a store that adds
 * `latencyMs` to every call: the double buffer should hide the latency at every segment boundary,
 * as long as a segment lasts longer than a load takes.
 */
export async function runBoundary(
  options: BoundaryOptions,
): Promise<{ section: Section; summary: BoundarySummary }> {
  const direct = await startTsServer('direct', 'servers/latency-server.ts', [
    tempDir(),
    '0',
    String(options.step),
  ]);
  const slow = await startTsServer('slow', 'servers/latency-server.ts', [
    tempDir(),
    String(options.latencyMs),
    String(options.step),
  ]);
  try {
    const servers = [direct, slow];
    if (options.warmupS > 0)
      for (const server of servers)
        await saturate(`${server.url}/api/segment/get/bench`, {
          connections: 10,
          durationS: options.warmupS,
        });
    const measure = async (server: ChildServer, saturated: boolean): Promise<Run> => {
      const before = loadsOf(server);
      if (saturated) {
        const result = await saturate(`${server.url}/api/segment/get/bench`, {
          connections: options.connections,
          durationS: options.runS,
        });
        return {
          rate: result.requestsPerSecond,
          ...result.latency,
          errors: result.errors,
          duplicates: 0,
          loads: loadsOf(server) - before,
        };
      }
      const result = await pacedLoad(server.url, '/api/segment/get/bench', {
        rate: options.fixedRate,
        durationMs: options.runS * 1000,
        connections: 64,
        keepBodies: true,
      });
      return {
        rate: result.achievedRate,
        ...result.latency,
        errors: result.errors,
        duplicates: result.bodies.length - new Set(result.bodies).size,
        loads: loadsOf(server) - before,
      };
    };
    const fixed = await alternate(servers, options.rounds, (server) => measure(server, false));
    const saturated = await alternate(servers, options.rounds, (server) => measure(server, true));
    const med = (runs: Run[] | undefined, key: keyof Run) => median((runs ?? []).map((run) => run[key]));
    const rows: string[][] = [];
    for (const [mode, runs] of [
      [`fixed ${integer(options.fixedRate)} req/s`, fixed],
      ['saturation', saturated],
    ] as const) {
      for (const server of servers) {
        const list = runs.get(server);
        rows.push([
          mode,
          server === direct ? 'none' : `${options.latencyMs} ms`,
          si(med(list, 'rate')),
          integer(med(list, 'loads')),
          ms(med(list, 'p50')),
          ms(med(list, 'p99')),
          ms(med(list, 'p999')),
          ms(med(list, 'max')),
          server === direct ? '1.00×' : `${(med(list, 'p999') / med(runs.get(direct), 'p999')).toFixed(2)}×`,
          integer((list ?? []).reduce((sum, run) => sum + run.errors, 0)),
        ]);
      }
    }
    const all = [...fixed.values(), ...saturated.values()].flat();
    const summary: BoundarySummary = {
      fixedRatio: med(fixed.get(slow), 'p999') / med(fixed.get(direct), 'p999'),
      fixedP999: med(fixed.get(slow), 'p999'),
      fixedP999Baseline: med(fixed.get(direct), 'p999'),
      saturatedRatio: med(saturated.get(slow), 'p999') / med(saturated.get(direct), 'p999'),
      duplicates: all.reduce((sum, run) => sum + run.duplicates, 0),
      errors: all.reduce((sum, run) => sum + run.errors, 0),
    };
    const runway = (0.9 * options.step) / options.latencyMs; // IDs/ms the preload can cover
    return {
      summary,
      section: {
        title: `Segment boundaries: step ${integer(options.step)}, ${options.latencyMs} ms of database latency vs none`,
        method: `Two servers (bench/servers/latency-server.ts: frond's HTTP app and SegmentAllocator, SQLite, the step held at ${integer(options.step)}), one behind **withLatency** (bench/lib/latency-store.ts), a decorator that waits ${options.latencyMs} ms before every store call. The Leaf endpoint of one tag; the two servers alternate in ${options.rounds} rounds of ${options.runS} s; figures are medians of the rounds, latencies in ms. Fixed rate: the open-loop generator; saturation: autocannon, ${options.connections} connections.`,
        table: table(
          [
            'Load',
            'Added latency',
            ' Req/s',
            ' Segments loaded per run',
            ' p50',
            ' p99',
            ' p99.9',
            ' max',
            ' p99.9 vs none',
            ' Errors',
          ],
          rows,
        ),
        notes: [
          `The next segment loads once 10 % of the current one is used, so the latency stays hidden while the remaining 90 % (${integer(0.9 * options.step)} IDs) lasts longer than the load: below ${integer(runway * 1000)} requests/s for ${options.latencyMs} ms. At saturation the step held at ${integer(options.step)} runs out before the load returns and requests wait for it; a real node's step doubles (Leaf's rule) until a segment lasts long enough.`,
          `Duplicates among the IDs answered at the fixed rate: ${integer(summary.duplicates)}.`,
        ],
      },
    };
  } finally {
    await Promise.all([direct.stop(), slow.stop()]);
  }
}
