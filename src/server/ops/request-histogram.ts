/** From 50 µs (an ID from memory) to 5 s (a request that waited for a slow database). */
export const BUCKETS: readonly number[] = [
  0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1, 5,
];

interface Series {
  route: string;
  status: string;
  /** Observations per bucket, not cumulative; the last slot is +Inf. */
  counts: Float64Array;
  sum: number;
  count: number;
}

interface MetricValue {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
}

/**
 * The request-latency histogram, kept in plain arrays and handed to prom-client only when scraped.
 * prom-client's own `observe` with labels costs about 0.4 µs, some 4% of the whole CPU cost of a
 * one-ID request (bench/README.md); this costs a map lookup and an increment.
 */
export class RequestHistogram {
  readonly name = 'frond_http_request_duration_seconds';
  readonly help = 'HTTP request latency by route and status';
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  /**
   * By route, then by status: no key string is built and hashed per request. With the string,
   * `observe` and the timer around it took 1.5–1.7 µs of self time per one-ID request in
   * bench/profile.ts; without it, 0.8. `all` keeps the series in the order they came, which is the
   * order a scrape lists them in.
   */
  private readonly byRoute = new Map<string, Map<number, Series>>();
  private readonly all: Series[] = [];

  observe(route: string, status: number, seconds: number): void {
    let statuses = this.byRoute.get(route);
    if (statuses === undefined) {
      statuses = new Map();
      this.byRoute.set(route, statuses);
    }
    let series = statuses.get(status);
    if (series === undefined) {
      series = {
        route,
        status: String(status),
        counts: new Float64Array(BUCKETS.length + 1),
        sum: 0,
        count: 0,
      };
      statuses.set(status, series);
      this.all.push(series);
    }
    const counts = series.counts;
    let bucket = 0;
    while (bucket < BUCKETS.length && seconds > (BUCKETS[bucket] as number)) bucket++;
    counts[bucket] = (counts[bucket] as number) + 1;
    series.sum += seconds;
    series.count++;
  }

  /** The shape prom-client's registry reads from a metric (as its own Histogram returns it). */
  async get(): Promise<{
    name: string;
    help: string;
    type: string;
    aggregator: string;
    values: MetricValue[];
  }> {
    const values: MetricValue[] = [];
    for (const { route, status, counts, sum, count } of this.all) {
      let cumulative = 0;
      for (let i = 0; i <= BUCKETS.length; i++) {
        cumulative += counts[i] as number;
        const le = i < BUCKETS.length ? (BUCKETS[i] as number) : '+Inf';
        values.push({ metricName: `${this.name}_bucket`, labels: { le, route, status }, value: cumulative });
      }
      values.push({ metricName: `${this.name}_sum`, labels: { route, status }, value: sum });
      values.push({ metricName: `${this.name}_count`, labels: { route, status }, value: count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /**
   * Requests so far and their latency buckets (per bucket, not cumulative; the last is +Inf), added
   * up over every series whose route `counts`: what the dashboard's rate and quantiles are made of.
   */
  totals(counts: (route: string) => boolean): { count: number; buckets: number[] } {
    const buckets = new Array<number>(BUCKETS.length + 1).fill(0);
    let count = 0;
    for (const series of this.all) {
      if (!counts(series.route)) continue;
      count += series.count;
      for (let i = 0; i <= BUCKETS.length; i++)
        buckets[i] = (buckets[i] as number) + (series.counts[i] as number);
    }
    return { count, buckets };
  }

  reset(): void {
    this.byRoute.clear();
    this.all.length = 0;
  }
}
