import { type Clock, within } from '../../core/clock.js';
import { GAP_REASONS, type GapReason } from '../../core/id-gaps.js';
import type { GapTotal, TagCatalogue } from '../../core/tag-catalogue.js';

/** The gaps of one reason as `/v1/stats` shows them: IDs as a decimal string (a sum can pass 2^53). */
export interface GapTotalJson {
  ranges: number;
  ids: string;
}

/** Every reason, with zeros for those without gaps, so a dashboard or a query finds each one. */
export type GapTotalsJson = Record<GapReason, GapTotalJson>;

/**
 * The store's totals are read at most this often: a scrape every 15 s and the dashboard's poll
 * every second would otherwise each be a `GROUP BY` over frond_gaps (one row a clean stop or crash
 * per tag: small, but not free on a table that grows for years).
 */
export const GAP_TOTALS_TTL_MS = 10_000;
/** A read that takes longer is left to finish in the background; the last totals are answered. */
export const GAP_TOTALS_WAIT_MS = 1_000;

/**
 * frond_gaps summed by reason (`TagCatalogue.gapTotals`), cached for GAP_TOTALS_TTL_MS, one read in
 * flight at a time. `current()` never waits (the stats snapshot is synchronous): it answers the last
 * totals read, and starts a read when they are stale. `read()` waits for a stale read up to
 * GAP_TOTALS_WAIT_MS (a scrape). A failed read keeps the last totals (none before the first).
 */
export class GapTotals {
  private totals: Map<GapReason, GapTotal> | undefined;
  private readAt = Number.NEGATIVE_INFINITY;
  private reading: Promise<void> | undefined;

  constructor(
    private readonly catalogue: Pick<TagCatalogue, 'gapTotals'>,
    private readonly clock: Clock,
    private readonly ttlMs = GAP_TOTALS_TTL_MS,
  ) {}

  /** The last totals read (undefined before the first answer); refreshes in the background when stale. */
  current(): Map<GapReason, GapTotal> | undefined {
    if (this.stale()) void this.refresh();
    return this.totals;
  }

  /** The totals, read again first when stale (waiting at most GAP_TOTALS_WAIT_MS). */
  async read(): Promise<Map<GapReason, GapTotal> | undefined> {
    if (this.stale()) await within(this.clock, this.refresh(), GAP_TOTALS_WAIT_MS);
    return this.totals;
  }

  private stale(): boolean {
    return this.clock.now() - this.readAt >= this.ttlMs;
  }

  private refresh(): Promise<void> {
    this.reading ??= this.catalogue
      .gapTotals()
      .then(
        (totals) => {
          this.totals = totals;
        },
        () => undefined,
      )
      .finally(() => {
        // A failure waits a full TTL too: a database that is down is not asked once a second.
        this.readAt = this.clock.now();
        this.reading = undefined;
      });
    return this.reading;
  }
}

/** The totals as JSON, every reason present. */
export function gapTotalsJson(totals: ReadonlyMap<GapReason, GapTotal> | undefined): GapTotalsJson {
  const json = {} as GapTotalsJson;
  for (const reason of GAP_REASONS) {
    const total = totals?.get(reason);
    json[reason] = { ranges: total?.ranges ?? 0, ids: (total?.ids ?? 0n).toString() };
  }
  return json;
}
