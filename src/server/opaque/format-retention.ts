import type { Clock } from '../../core/clock.js';
import { describeError, isFrondError } from '../../core/errors.js';
import { parseCounterName } from '../../core/id-format.js';
import type { Logger } from '../../core/logger.js';
import type { TagCatalogue } from '../../core/tag-catalogue.js';

/** `--format-retention-days`: a week of counters kept after their period, for people looking back. */
export const DEFAULT_FORMAT_RETENTION_DAYS = 7;
/** How often every node looks for old counters: a period is an hour at least, so 10 min is plenty. */
export const FORMAT_RETENTION_EVERY_MS = 10 * 60_000;

const DAY_MS = 24 * 60 * 60_000;
/**
 * The widest offset of any zone from UTC (Pacific/Kiritimati +14:00, Etc/GMT+12 −12:00): a period's
 * key is its local date, so its end in UTC is the local end plus at most this. The clean-up takes
 * the latest end the key allows, without reading the tag's zone: a counter may stay 14 h longer
 * than the retention, never go sooner.
 */
const MAX_ZONE_OFFSET_MS = 14 * 60 * 60_000;

/**
 * The latest moment (ms since 1970) the period of `key` can end, in any zone; undefined for `all`
 * (a format without a date has one period for ever) or a key that is no period's.
 */
export function latestPeriodEnd(key: string): number | undefined {
  const match = /^([0-9]{4})([0-9]{2})?([0-9]{2})?([0-9]{2})?$/.exec(key);
  if (match === null) return undefined;
  const year = Number(match[1]);
  const [month, day, hour] = [match[2], match[3], match[4]].map((part) =>
    part === undefined ? undefined : Number(part),
  );
  // The first local moment after the period, as if local time were UTC (Date.UTC carries over).
  let end: number;
  if (month === undefined) end = Date.UTC(year + 1, 0, 1);
  else if (day === undefined) end = Date.UTC(year, month, 1);
  else if (hour === undefined) end = Date.UTC(year, month - 1, day + 1);
  else end = Date.UTC(year, month - 1, day, hour + 1);
  return end + MAX_ZONE_OFFSET_MS;
}

/**
 * Removes formatted tags' counter rows whose period ended more than `retentionDays` ago by this
 * node's clock, every 10 min, on every node (another node removing the same row first is fine).
 * `removeTag` keeps each one's high-water in frond_high_water, so a node whose clock is behind by
 * more than the retention, and creates such a counter again, starts it above what it served: no
 * number repeats (docs/formats.md).
 */
export class FormatRetention {
  private cancel: (() => void) | undefined;
  private closed = false;

  constructor(
    private readonly store: Pick<TagCatalogue, 'listTags' | 'removeTag'>,
    private readonly clock: Clock,
    private readonly logger: Logger,
    readonly retentionDays: number = DEFAULT_FORMAT_RETENTION_DAYS,
    private readonly everyMs: number = FORMAT_RETENTION_EVERY_MS,
  ) {}

  /** Starts the clean-up: the first one after `everyMs`, not at start (a start has enough to do). */
  start(): void {
    this.schedule();
  }

  close(): void {
    this.closed = true;
    this.cancel?.();
  }

  /** One clean-up: answers the counters it removed. Store failures are logged and wait for the next. */
  async sweep(): Promise<string[]> {
    const removed: string[] = [];
    let names: string[];
    try {
      names = await this.store.listTags();
    } catch (error) {
      this.logger.log('warn', 'format.cleanup_failed', { error: describeError(error) });
      return removed;
    }
    const before = this.clock.now() - this.retentionDays * DAY_MS;
    for (const name of names) {
      if (this.closed) break;
      const counter = parseCounterName(name);
      if (counter === undefined) continue;
      const end = latestPeriodEnd(counter.key);
      if (end === undefined || end > before) continue;
      try {
        await this.store.removeTag(name);
        removed.push(name);
      } catch (error) {
        if (isFrondError(error, 'TAG_NOT_FOUND')) continue;
        this.logger.log('warn', 'format.cleanup_failed', { counter: name, error: describeError(error) });
        break;
      }
    }
    if (removed.length > 0)
      this.logger.log('info', 'format.counters_removed', {
        count: removed.length,
        retentionDays: this.retentionDays,
      });
    return removed;
  }

  private schedule(): void {
    if (this.closed) return;
    this.cancel = this.clock.schedule(() => {
      void this.sweep().finally(() => this.schedule());
    }, this.everyMs);
  }
}
