import { BUCKETS } from './request-histogram.js';

/** Requests and error answers so far, as the stats sampler reads them once a second. */
export interface RequestTotals {
  /** Requests answered (the operator's own routes left out: `Metrics.requestTotals`). */
  count: number;
  /** Error answers of any route by code, as `frond_errors_total` counts them. */
  errors: Readonly<Record<string, number>>;
  /** `count` by latency bucket (`BUCKETS`, then +Inf), not cumulative. */
  buckets: readonly number[];
}

/** What `/v1/stats` says of the requests of the last seconds. */
export interface RequestRates {
  /** The seconds the figures are taken over (fewer than 10 in the node's first seconds). */
  windowSeconds: number;
  perSecond: number;
  errorsPerSecond: number;
  /** `errorsPerSecond` by error code, the codes answered in the window only (`{"TAG_NOT_FOUND": 0.3}`). */
  errorsPerSecondByCode: Record<string, number>;
  /** Latency quantiles in milliseconds; null when no request was answered in the window. */
  latencyMs: { p50: number; p90: number; p99: number } | null;
}

/** The rates between two readings of the totals taken `seconds` apart. */
export function requestRates(first: RequestTotals, last: RequestTotals, seconds: number): RequestRates {
  if (seconds <= 0)
    return { windowSeconds: 0, perSecond: 0, errorsPerSecond: 0, errorsPerSecondByCode: {}, latencyMs: null };
  const buckets = last.buckets.map((count, i) => Math.max(0, count - (first.buckets[i] ?? 0)));
  const quantile = (q: number) => {
    const seconds = bucketQuantile(q, buckets);
    return seconds === null ? null : seconds * 1000;
  };
  const p50 = quantile(0.5);
  let errors = 0;
  const errorsPerSecondByCode: Record<string, number> = {};
  for (const [code, total] of Object.entries(last.errors)) {
    const count = total - (first.errors[code] ?? 0);
    if (count <= 0) continue;
    errors += count;
    errorsPerSecondByCode[code] = count / seconds;
  }
  return {
    windowSeconds: seconds,
    perSecond: Math.max(0, last.count - first.count) / seconds,
    errorsPerSecond: errors / seconds,
    errorsPerSecondByCode,
    latencyMs: p50 === null ? null : { p50, p90: quantile(0.9) as number, p99: quantile(0.99) as number },
  };
}

/**
 * The `q` quantile of observations counted per bucket, estimated as Prometheus's
 * `histogram_quantile` does (linear within the bucket, 0 as the first bucket's lower bound, the
 * highest finite bound for the +Inf bucket), so that the dashboard and a Grafana panel over
 * `frond_http_request_duration_seconds` agree. Null when nothing was counted.
 */
export function bucketQuantile(
  q: number,
  buckets: readonly number[],
  bounds: readonly number[] = BUCKETS,
): number | null {
  const total = buckets.reduce((sum, count) => sum + count, 0);
  if (total === 0) return null;
  const rank = q * total;
  let below = 0;
  for (let i = 0; i < buckets.length; i++) {
    const count = buckets[i] as number;
    if (count > 0 && below + count >= rank) {
      if (i >= bounds.length) return bounds[bounds.length - 1] as number;
      const lower = i === 0 ? 0 : (bounds[i - 1] as number);
      const upper = bounds[i] as number;
      return lower + ((upper - lower) * (rank - below)) / count;
    }
    below += count;
  }
  return bounds[bounds.length - 1] as number;
}
