import type { Clock } from '../../core/clock.js';
import { FrondError } from '../../core/errors.js';

/** Past this many clients, buckets idle for a minute are dropped, so the map cannot grow forever. */
const MAX_CLIENTS = 10_000;

/**
 * A token bucket per client address: `perSecond` requests a second, bursts up to one second's
 * worth. One client that loops on the node cannot starve the others.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly perSecond: number,
    private readonly clock: Clock,
  ) {}

  take(client: string): void {
    const now = this.clock.now();
    let bucket = this.buckets.get(client);
    if (bucket === undefined) {
      if (this.buckets.size >= MAX_CLIENTS) this.prune(now);
      bucket = { tokens: this.perSecond, at: now };
      this.buckets.set(client, bucket);
    } else {
      bucket.tokens = Math.min(this.perSecond, bucket.tokens + ((now - bucket.at) * this.perSecond) / 1000);
      bucket.at = now;
    }
    if (bucket.tokens < 1) {
      throw new FrondError(
        'RATE_LIMITED',
        `more than ${this.perSecond} requests per second from ${client}; slow down`,
      );
    }
    bucket.tokens -= 1;
  }

  private prune(now: number): void {
    for (const [client, bucket] of this.buckets) if (now - bucket.at > 60_000) this.buckets.delete(client);
    if (this.buckets.size >= MAX_CLIENTS) this.buckets.clear();
  }
}
