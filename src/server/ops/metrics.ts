import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { FrondErrorCode } from '../../core/errors.js';
import { GAP_REASONS, type GapReason } from '../../core/id-gaps.js';
import type { CoreObserver } from '../../core/observer.js';
import type { RequestObserver } from '../http/request-timing.js';
import type { RouteLabel } from '../http/route-label.js';
import type { GapTotals } from './gap-totals.js';
import { RequestHistogram } from './request-histogram.js';
import type { RequestTotals } from './request-window.js';
import type { StatsSampler } from './stats-sampler.js';
import type { LabelledTag, OtherTags } from './tag-labels.js';
import { FROND_VERSION } from './version.js';

/** The `tag` label of the tags outside the busiest `--metrics-tags`, added up. */
export const OTHER_TAGS = '(other)';

/**
 * Routes left out of the dashboard's requests per second and latency: the dashboard polls
 * `/v1/stats` once a second itself, and probes and scrapers come on their own schedule, so counting
 * them would show a node with no traffic as serving about one request a second, in well under 1 ms.
 */
const OPERATOR_ROUTES: ReadonlySet<string> = new Set<RouteLabel>([
  'dashboard',
  'stats',
  'metrics',
  'readyz',
  'healthz',
]);

/**
 * Prometheus metrics, all named `frond_…`. Gauges and counters that mirror the core's own counters
 * are read at scrape time (`collect`), so the path of a request pays only for the request histogram;
 * segment load times come through `CoreObserver`.
 */
export class Metrics implements RequestObserver, CoreObserver {
  readonly registry = new Registry();
  private readonly requests = new RequestHistogram();
  private readonly errors: Counter<'code'>;
  private readonly loadSeconds: Histogram;
  /** Error answers so far by code, beside the counter: the sampler reads these once a second. */
  private readonly errorCounts: Partial<Record<FrondErrorCode, number>> = {};
  private readonly givenUp: Counter<'reason'>;
  private readonly handedBack: Counter;
  private readonly givenUpCounts = new Map<GapReason, bigint>();
  private handedBackCount = 0n;
  private gapTotals: GapTotals | undefined;

  constructor(stats: StatsSampler) {
    const registers = [this.registry];
    // process_* and nodejs_*: CPU, memory, open file descriptors (against ulimit -n), event-loop lag, GC.
    collectDefaultMetrics({ register: this.registry });
    // prom-client's registry reads any object with its metric shape; see RequestHistogram for why.
    this.registry.registerMetric(this.requests as unknown as Parameters<Registry['registerMetric']>[0]);
    this.errors = new Counter({
      name: 'frond_errors_total',
      help: 'Error answers by code',
      labelNames: ['code'],
      registers,
    });
    this.loadSeconds = new Histogram({
      name: 'frond_segment_load_duration_seconds',
      help: 'Time to reserve a segment in the store (successful loads; failures: frond_segment_loads_total)',
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
      registers,
    });
    this.givenUp = new Counter({
      name: 'frond_ids_given_up_total',
      help: 'IDs this process recorded as gaps (never issued after, never to be), by reason: crash (held at a crash, reported at the next start), unsafe_hand_back, opaque_look_ahead, range_unused (a client returned them), fence',
      labelNames: ['reason'],
      registers,
    });
    for (const reason of GAP_REASONS) this.givenUp.inc({ reason }, 0);
    this.handedBack = new Counter({
      name: 'frond_ids_handed_back_total',
      help: 'IDs this process handed back to the table at a clean stop (the next grant of the tag starts at them)',
      registers,
    });
    const gauges = () => this.gapTotals;
    new Gauge({
      name: 'frond_gap_ids',
      help: 'IDs of every tag recorded in frond_gaps, by reason (the whole store, read at most every 10 s; absent before the first read)',
      labelNames: ['reason'],
      registers,
      // Every process of a --workers node reads the same table.
      aggregator: 'max',
      async collect() {
        const totals = await gauges()?.read();
        this.reset();
        if (totals === undefined) return;
        for (const reason of GAP_REASONS) this.set({ reason }, Number(totals.get(reason)?.ids ?? 0n));
      },
    });
    new Counter({
      name: 'frond_clock_backwards_total',
      help: 'Times the clock was found behind the last timestamp used',
      registers,
      // The snowflake node counts these itself (backwardsEvents), so nothing on its path reports them.
      collect() {
        this.reset();
        const snowflake = stats.snapshot({ tags: [] }).snowflake;
        if (snowflake) this.inc(snowflake.backwardsEvents);
      },
    });
    new Counter({
      name: 'frond_ids_issued_total',
      help: 'IDs handed out: segment mode by tag (the busiest --metrics-tags tags, the rest as tag="(other)"), snowflake mode by worker ID (no tag label)',
      labelNames: ['mode', 'tag', 'worker_id'],
      registers,
      collect() {
        this.reset();
        const tags = stats.tagMetrics();
        for (const tag of tags.labelled) this.inc({ mode: 'segment', tag: tag.tag }, tag.issued);
        if (tags.other) this.inc({ mode: 'segment', tag: OTHER_TAGS }, tags.other.issued);
        const snowflake = stats.snapshot({ tags: [] }).snowflake;
        if (snowflake)
          this.inc({ mode: 'snowflake', worker_id: String(snowflake.workerId) }, snowflake.issued);
      },
    });
    new Counter({
      name: 'frond_segment_loads_total',
      help: 'Segment loads by tag and result',
      labelNames: ['tag', 'result'],
      registers,
      collect() {
        this.reset();
        const tags = stats.tagMetrics();
        const rows: { tag: string; loads: number; loadFailures: number }[] = tags.labelled;
        for (const tag of tags.other ? [...rows, { ...tags.other, tag: OTHER_TAGS }] : rows) {
          this.inc({ tag: tag.tag, result: 'ok' }, tag.loads);
          this.inc({ tag: tag.tag, result: 'error' }, tag.loadFailures);
        }
      },
    });
    new Gauge({
      name: 'frond_segment_tags',
      help: 'Tags the node holds (each has its own tag label in the frond_segment_* series only among the --metrics-tags busiest)',
      registers,
      // Every process of a --workers node holds the same tags.
      aggregator: 'max',
      collect() {
        this.set(stats.tagMetrics().tagCount);
      },
    });
    const perTag = (
      name: string,
      help: string,
      read: (tag: LabelledTag | OtherTags) => number | null,
      // How `--workers` adds up the processes' values (cluster/aggregate.ts): sum unless said otherwise.
      aggregator: 'sum' | 'min' | 'max' = 'sum',
    ) =>
      new Gauge({
        name,
        help,
        labelNames: ['tag'],
        registers,
        aggregator,
        collect() {
          this.reset();
          const tags = stats.tagMetrics();
          for (const tag of tags.labelled) {
            const value = read(tag);
            if (value !== null) this.set({ tag: tag.tag }, value);
          }
          const other = tags.other && read(tags.other);
          if (other !== undefined && other !== null) this.set({ tag: OTHER_TAGS }, other);
        },
      });
    // For tag="(other)": the sum of left and rate, the shortest runway, the largest step, 1 only if every next segment is in.
    perTag('frond_segment_ids_left', 'IDs left in both buffers of the tag', (t) => t.left);
    perTag('frond_segment_rate', 'IDs per second handed out over the last 10 s', (t) => t.rate);
    perTag(
      'frond_segment_runway_seconds',
      'Seconds the buffered IDs last at the current rate (absent when idle; for (other) the shortest)',
      (t) => t.runwaySeconds,
      'min',
    );
    perTag('frond_segment_step', 'Current dynamic step of the tag', (t) => t.step, 'max');
    perTag(
      'frond_segment_next_ready',
      '1 when the next segment is loaded',
      (t) => (t.nextReady ? 1 : 0),
      'min',
    );
    // The usual build-info gauge: always 1, the version in its labels (join it onto other series).
    new Gauge({
      name: 'frond_build_info',
      help: 'Always 1; the labels say which frond and Node.js run',
      labelNames: ['version', 'node'],
      registers,
    }).set({ version: FROND_VERSION, node: process.versions.node }, 1);
    new Gauge({
      name: 'frond_snowflake_time_left_seconds',
      help: 'Seconds until the snowflake time bits run out (--snowflake-layout, --time-unit-ms, --epoch); /readyz warns under 3 years, a start refuses under 1 (absent when snowflake mode is off)',
      // With --workers every process has the same layout: the least left, not a sum.
      aggregator: 'min',
      registers,
      collect() {
        this.reset();
        const snowflake = stats.snapshot({ tags: [] }).snowflake;
        if (snowflake) this.set(snowflake.layout.timeLeftSeconds);
      },
    });
    new Gauge({
      name: 'frond_snowflake_layout_info',
      help: 'Always 1; the labels say the snowflake layout: bits (time+worker+sequence), time unit in ms, epoch in ms',
      labelNames: ['bits', 'time_unit_ms', 'epoch'],
      aggregator: 'max',
      registers,
      collect() {
        this.reset();
        const snowflake = stats.snapshot({ tags: [] }).snowflake;
        if (snowflake) {
          const { bits, timeUnitMs, epoch } = snowflake.layout;
          this.set({ bits, time_unit_ms: String(timeUnitMs), epoch: String(epoch) }, 1);
        }
      },
    });
    new Gauge({
      name: 'frond_snowflake_worker_id',
      help: 'Snowflake worker ID held by this node (absent when snowflake mode is off; with --workers, one per process, label worker)',
      labelNames: ['worker'],
      registers,
      collect() {
        this.reset();
        const snowflake = stats.snapshot({ tags: [] }).snowflake;
        if (snowflake) this.set(snowflake.workerId);
      },
    });
  }

  request(route: RouteLabel, status: number, seconds: number): void {
    this.requests.observe(route, status, seconds);
  }

  error(code: FrondErrorCode): void {
    this.errors.inc({ code });
    this.errorCounts[code] = (this.errorCounts[code] ?? 0) + 1;
  }

  /** What `StatsSampler` turns into requests and errors per second and latency quantiles. */
  requestTotals(): RequestTotals {
    const { count, buckets } = this.requests.totals((route) => !OPERATOR_ROUTES.has(route));
    return { count, errors: { ...this.errorCounts }, buckets };
  }

  segmentLoaded(_tag: string, ms: number): void {
    this.loadSeconds.observe(ms / 1000);
  }

  /** `count` IDs recorded as gaps by this process (a crash reported at start, a client's unused range, a stop). */
  idsGivenUp(_tag: string, reason: GapReason, count: bigint): void {
    if (count <= 0n) return;
    this.givenUp.inc({ reason }, Number(count));
    this.givenUpCounts.set(reason, (this.givenUpCounts.get(reason) ?? 0n) + count);
  }

  /** `count` IDs this process handed back to the table at its clean stop. */
  idsHandedBack(_tag: string, count: bigint): void {
    if (count <= 0n) return;
    this.handedBack.inc(Number(count));
    this.handedBackCount += count;
  }

  /** The gauge `frond_gap_ids` reads these at scrape: the store's frond_gaps summed by reason. */
  attachGapTotals(totals: GapTotals): void {
    this.gapTotals = totals;
  }

  /** What this process gave up and handed back since it started, exact (the counters are floats). */
  gapCounts(): { givenUp: Record<GapReason, string>; handedBack: string } {
    const givenUp = {} as Record<GapReason, string>;
    for (const reason of GAP_REASONS) givenUp[reason] = (this.givenUpCounts.get(reason) ?? 0n).toString();
    return { givenUp, handedBack: this.handedBackCount.toString() };
  }

  async text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
