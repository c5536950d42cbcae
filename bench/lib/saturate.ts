import autocannon from 'autocannon';
import { type LatencySummary, Samples, summarize } from './stats.js';

export interface SaturationResult {
  requestsPerSecond: number;
  /** Response bytes per second (bodies and headers). */
  bytesPerSecond: number;
  latency: LatencySummary;
  /** Connection errors, timeouts and non-2xx answers together. */
  errors: number;
}

export interface SaturationOptions {
  connections: number;
  durationS: number;
}

/**
 * Closed-loop load at saturation with autocannon: each connection sends its next request as soon as
 * the previous answer arrives (no pipelining). Latencies are taken from autocannon's per-response
 * event in fractional milliseconds, because its own histogram rounds to whole milliseconds.
 */
export async function saturate(url: string, options: SaturationOptions): Promise<SaturationResult> {
  const latencies = new Samples();
  const instance = autocannon({
    url,
    connections: options.connections,
    pipelining: 1,
    duration: options.durationS,
    timeout: 10,
  });
  instance.on('response', (_client: unknown, _status: number, _bytes: number, responseTimeMs: number) => {
    latencies.push(responseTimeMs);
  });
  const result = await instance;
  const seconds = result.duration > 0 ? result.duration : options.durationS;
  return {
    requestsPerSecond: result.requests.total / seconds,
    bytesPerSecond: result.throughput.total / seconds,
    latency: summarize(latencies.values()),
    errors: result.errors + result.timeouts + result.non2xx,
  };
}
