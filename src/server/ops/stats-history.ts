import { type RequestRates, type RequestTotals, requestRates } from './request-window.js';
import { RATE_WINDOW_S, type RatePoint } from './stats-snapshot.js';

/** Five minutes of one-second points for the dashboard chart. */
const HISTORY_POINTS = 300;

const EMPTY_TOTALS: RequestTotals = { count: 0, errors: {}, buckets: [] };

/**
 * What the sampler keeps of the seconds gone by: IDs handed out in each of the last HISTORY_POINTS
 * (the dashboard chart), and the request totals of the last `RATE_WINDOW_S` + 1 samples (requests
 * and errors per second, latency).
 */
export class StatsHistory {
  private readonly points: RatePoint[] = [];
  private lastSegmentTotal = 0;
  private lastSnowflakeTotal = 0;
  /** The request totals of the last `RATE_WINDOW_S` + 1 samples, oldest first. */
  private readonly requestWindow: RequestTotals[] = [];

  /** One sample, at `at`: the IDs issued so far by mode, and the request totals when they are counted. */
  record(
    at: number,
    segmentTotal: number,
    snowflakeTotal: number,
    requests: RequestTotals | undefined,
  ): void {
    this.points.push({
      at,
      // A dropped tag takes its count with it; never show a negative rate.
      segment: Math.max(0, segmentTotal - this.lastSegmentTotal),
      snowflake: Math.max(0, snowflakeTotal - this.lastSnowflakeTotal),
    });
    if (this.points.length > HISTORY_POINTS) this.points.shift();
    if (requests !== undefined) {
      this.requestWindow.push(requests);
      if (this.requestWindow.length > RATE_WINDOW_S + 1) this.requestWindow.shift();
    }
    this.lastSegmentTotal = segmentTotal;
    this.lastSnowflakeTotal = snowflakeTotal;
  }

  /** The points so far, oldest first (a copy). */
  rates(): RatePoint[] {
    return [...this.points];
  }

  /** Requests, error answers and latency over the window. */
  requests(): RequestRates {
    const first = this.requestWindow[0];
    const last = this.requestWindow.at(-1);
    // One sample a second, so the window's seconds are its samples less one.
    return requestRates(first ?? EMPTY_TOTALS, last ?? EMPTY_TOTALS, this.requestWindow.length - 1);
  }
}
