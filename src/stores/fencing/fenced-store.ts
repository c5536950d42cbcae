import { realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { describeError, FrondError } from '../../core/errors.js';
import { type Gap, gapSize, type HandBackResult, type HeldRange, splitHeld } from '../../core/id-gaps.js';
import { type Logger, silentLogger } from '../../core/logger.js';
import type { CoreObserver } from '../../core/observer.js';
import type { Allocation, SegmentStore } from '../../core/segment-store.js';
import { kindKey, kindName, PLAIN_KIND, type TagKind } from '../../core/tag-kind.js';
import type { FencedAdvance, SegmentPrimitive } from '../segment-primitive.js';
import { HighWaterFile } from './high-water-file.js';

export interface FencedStoreOptions {
  dataDir: string;
  /** IDs a fence adds to every tag (`--fence-skip`). */
  fenceSkip: number;
  logger?: Logger;
  /** This node's name in frond_gaps (host:port). */
  node?: string;
  /** Told of the crash gaps this process reports at its start. */
  observer?: Pick<CoreObserver, 'idsGivenUp'>;
}

/** A fence and the advance after it are tried this often before the load is given up (503). */
const MAX_ROUNDS = 4;

/**
 * The segment store as a node serves from it, and the only user of a backend's primitive
 * (`SegmentPrimitive`): every segment load goes through the rules below, so no range is served
 * twice when the database loses commits (a failover to an asynchronous replica), goes back (a
 * restore from a backup), or two primaries are alive at once (split brain). The tag catalogue is
 * not its business (served-store.ts puts the two together).
 *
 * 1. Each advance is checked in its own transaction against frond's fence row (the primitive's
 *    `advance`: every store has it); a row that names another database, or none, means this one
 *    may have lost grants: the node fences (one guarded transaction, one node does it, the others
 *    find it done) and advances again.
 * 2. A grant that starts below the highest max_id this node was ever granted (remembered durably
 *    in the data dir, `HighWaterFile`) means the database went back: it is thrown away, and the
 *    database is fenced past it: every tag up by the skip, so past what the other nodes (or the
 *    other processes on an SQLite file) hold too, which this node's data dir does not know.
 * 3. A grant under an older epoch than one this node saw, from another database than the one that
 *    epoch was seen on, comes from a primary that was replaced: it is refused (503), never served.
 *    On an SQLite file (`singleCopy`) there is no other primary: it is the file restored, fenced.
 * 4. The grant is written to the data dir before it is handed to the buffer.
 *
 * Every refusal is STORE_UNAVAILABLE, which the core answers as 503 SEGMENT_UNAVAILABLE.
 */
export class FencedStore implements SegmentStore {
  readonly description: string;
  private readonly highWater: HighWaterFile;
  private readonly logger: Logger;
  private readonly skip: bigint;
  /** One fence at a time from this node; loads of other tags wait for it. */
  private fencing: Promise<void> | undefined;
  /**
   * The advance of a tag in flight from this node, if any. Advances of one tag run one after
   * another, so each grant is compared with the high-water of every grant before it: two in
   * flight at once would come back in any order, and the later-reserved one, recorded first, would
   * make the other look like a database that went back (and fence every tag for nothing).
   */
  private readonly inFlight = new Map<string, Promise<unknown>>();
  private readonly node: string;
  private readonly observer: Pick<CoreObserver, 'idsGivenUp'> | undefined;
  /**
   * What the data dir says this process held when it last stopped without accounting for it (a
   * crash): reported as `crash` gaps once the database answers (`reportCrash`), then released.
   */
  private crashHeld: Map<string, { start: bigint; end: bigint }[]>;
  private crashReport: Promise<void> | undefined;

  constructor(
    private readonly primitive: SegmentPrimitive,
    options: FencedStoreOptions,
  ) {
    this.description = primitive.description;
    this.logger = options.logger ?? silentLogger;
    this.skip = BigInt(options.fenceSkip);
    this.node = options.node ?? 'unknown';
    this.observer = options.observer;
    const scope = scopeOf(primitive.description);
    this.highWater = new HighWaterFile(options.dataDir, scope, {
      // Records an older version kept under another spelling of the same SQLite file.
      ...(scope.startsWith('sqlite:') && { alsoTagsOf: (other: string) => other.startsWith('sqlite:') }),
    });
    this.crashHeld = new Map([...this.highWater.state.held].map(([tag, grants]) => [tag, [...grants]]));
  }

  advance(tag: string, step?: number): Promise<Allocation | undefined> {
    if (this.crashHeld.size > 0) void this.reportCrash();
    const before = this.inFlight.get(tag);
    const run = (before === undefined ? Promise.resolve() : before.catch(() => {})).then(() =>
      this.advanceInTurn(tag, step),
    );
    this.inFlight.set(tag, run);
    const forget = () => {
      if (this.inFlight.get(tag) === run) this.inFlight.delete(tag);
    };
    run.then(forget, forget);
    return run;
  }

  private async advanceInTurn(tag: string, step: number | undefined): Promise<Allocation | undefined> {
    // Fences the database may have lost: the epochs this node saw above the one it answers with. A
    // database restored from before a fence lost that fence's skip as well as its grants, and so
    // did every node's ranges above it: one skip from the restored floor lands among them (a copy
    // taken at epoch 1, a fence to 2 that raised every tag by 10^9, grants above it, the copy put
    // back: the next fence raised to 10^9 + 1001, where another process held its range). Each
    // fence is raised by the skip once more per epoch lost.
    let lost = 0;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      if (this.fencing !== undefined) await this.fencing;
      // What this node knew when it asked: an answer read before a fence that this node learned of
      // meanwhile carries the older epoch, and is no sign of a database that went back.
      const sentEpoch = this.highWater.state.epoch;
      const sentIdentity = this.highWater.state.identity;
      const result = await this.advanceOnce(tag, step);
      if (result === undefined) return undefined;
      if (result.kind === 'unfenced') {
        this.logger.log('warn', 'segment.fence_needed', {
          tag,
          store: this.description,
          reason: result.epoch === 0 ? 'first use of this database' : 'database identity changed',
          identity: result.identity,
        });
        // A row made again starts at 1 or above, without a raise: from 1 up, each epoch was a raise.
        lost = Math.max(lost, sentEpoch - Math.max(result.epoch, 1));
        await this.fence(result.epoch, sentEpoch, lost);
        continue;
      }
      const { allocation, epoch, identity } = result;
      if (epoch < sentEpoch) {
        if (identity !== sentIdentity && !this.primitive.singleCopy) {
          throw new FrondError(
            'STORE_UNAVAILABLE',
            `${this.description} is behind: it answers with fence epoch ${epoch} (database ${identity}), and this node already saw epoch ${sentEpoch} on ${sentIdentity}; a primary that was replaced is not served from (split brain)`,
          );
        }
        // The very database that showed a newer epoch shows an older one: it was restored.
        this.logger.log('warn', 'segment.fence_needed', {
          tag,
          store: this.description,
          reason: 'fence epoch went back',
          epoch,
          seen: sentEpoch,
          ...(identity === sentIdentity ? {} : { identity, seenIdentity: sentIdentity }),
        });
        lost = Math.max(lost, sentEpoch - epoch);
        await this.discard(tag, allocation);
        await this.fence(epoch, sentEpoch, lost);
        continue;
      }
      const start = allocation.maxId - BigInt(allocation.step);
      const reached = this.highWater.state.tags.get(tag);
      if (reached !== undefined && start < reached) {
        await this.discard(tag, allocation);
        this.logger.log('warn', 'segment.fence_needed', {
          tag,
          store: this.description,
          reason: 'database went back',
          start: start.toString(),
          reached: reached.toString(),
        });
        await this.fence(epoch, Math.max(epoch, this.highWater.state.epoch), lost);
        continue;
      }
      const recorded = this.highWater.state.kinds.get(tag);
      if (recorded !== undefined && recorded !== kindKey(allocation.kind))
        throw kindChangedByHand(tag, recorded, allocation);
      await this.record(tag, allocation, epoch, identity);
      return allocation;
    }
    throw new FrondError(
      'STORE_UNAVAILABLE',
      `${this.description}: the fence of tag ${tag} did not settle after ${MAX_ROUNDS} rounds; retry`,
    );
  }

  /**
   * Whether this node was ever granted a range of `tag` (its data dir's record): a name that served
   * IDs, whatever the database remembers of it now (served-store.ts).
   */
  hasServed(tag: string): boolean {
    return this.highWater.state.tags.has(tag);
  }

  /**
   * A clean stop's hand-back of `tag` (SegmentStore.handBack): `held` is what this process's buffer
   * of the tag held unused when it stopped serving it, its last grant ending at `to`. After any
   * advance of the tag in flight and any fence settle: the data dir's record goes down to the
   * tail's first ID first (harmless if the database then refuses: nothing at or above it was
   * issued from this process), then the database decides in one transaction whether the tail goes
   * back (the primitive, under the epoch and identity this process was last granted with), and the
   * grants are released from the crash record once the outcome is known. Rejects when the database
   * does not answer: the grants stay held, and the next start reports them as a crash.
   */
  async handBack(tag: string, held: readonly HeldRange[], to: bigint): Promise<HandBackResult> {
    await this.inFlight.get(tag)?.catch(() => undefined);
    if (this.fencing !== undefined) await this.fencing.catch(() => undefined);
    if (this.crashHeld.size > 0) await this.reportCrash();
    if (held.every((range) => range.end <= range.start)) {
      await this.highWater.release(tag, to);
      return { tag, returned: undefined, gaps: [] };
    }
    const { epoch, identity } = this.highWater.state;
    const tail = splitHeld(held, to).tail;
    if (tail !== undefined && identity !== undefined) await this.highWater.lower(tag, tail.from, to);
    const result = await this.primitive.handBack({
      tag,
      held,
      to,
      epoch,
      // No identity seen: no grant this process could vouch for, so the store records gaps.
      identity: identity ?? '',
      node: this.node,
    });
    await this.highWater.release(tag, to).catch((error: unknown) => {
      // Only the crash report is wrong then: the next start lists these ranges as a crash.
      this.logger.log('warn', 'segment.release_unrecorded', { tag, error: describeError(error) });
    });
    return result;
  }

  /**
   * Records what this process held when it last died as `crash` gaps, once: started by the first
   * advance after the open (and by a hand-back), tried again by a later one if the database did
   * not answer. An upper bound: the grants' IDs that were served before the crash are in it too.
   * Never rejects.
   */
  private reportCrash(): Promise<void> {
    this.crashReport ??= (async () => {
      const gaps: Gap[] = [];
      for (const [tag, grants] of this.crashHeld)
        for (const grant of grants)
          gaps.push({ tag, start: grant.start, end: grant.end, reason: 'crash', node: this.node, at: 0 });
      try {
        await this.primitive.recordGaps(gaps);
      } catch (error) {
        this.logger.log('warn', 'segment.crash_gaps_unrecorded', {
          tags: this.crashHeld.size,
          error: describeError(error),
        });
        return;
      }
      const reported = this.crashHeld;
      this.crashHeld = new Map();
      this.logger.log('warn', 'segment.crash_gaps', {
        tags: reported.size,
        ids: gapSize(gaps).toString(),
        node: this.node,
      });
      for (const [tag, grants] of reported) {
        this.observer?.idsGivenUp(tag, 'crash', gapSize(grants));
        const last = grants[grants.length - 1];
        if (last !== undefined) await this.highWater.release(tag, last.end).catch(() => undefined);
      }
    })().finally(() => {
      this.crashReport = undefined;
    });
    return this.crashReport;
  }

  close(): Promise<void> {
    return this.primitive.close();
  }

  /**
   * A grant thrown away before a fence (the database went back): the part of it above this node's
   * record of the tag was never issued by anyone this node knows of, and the fence's own gap starts
   * at the row's max_id, above it; so it is recorded as a `fence` gap, or every ID of the tag would
   * not be accounted for. Below the record the IDs may have been issued (by this node, before the
   * database lost them). Never rejects: a gap that cannot be recorded only leaves the report short.
   */
  private async discard(tag: string, allocation: Allocation): Promise<void> {
    const start = allocation.maxId - BigInt(allocation.step);
    const reached = this.highWater.state.tags.get(tag);
    const from = reached !== undefined && reached > start ? reached : start;
    if (from >= allocation.maxId) return;
    try {
      await this.primitive.recordGaps([
        { tag, start: from, end: allocation.maxId, reason: 'fence', node: 'fence', at: 0 },
      ]);
      this.observer?.idsGivenUp(tag, 'fence', allocation.maxId - from);
    } catch (error) {
      this.logger.log('warn', 'segment.fence_gap_unrecorded', {
        tag,
        start: from.toString(),
        end: allocation.maxId.toString(),
        error: describeError(error),
      });
    }
  }

  private advanceOnce(tag: string, step: number | undefined): Promise<FencedAdvance | undefined> {
    return this.primitive.advance(tag, step);
  }

  /** `lost`: fences the database may have lost, each a skip more (see advanceInTurn). */
  private fence(observedEpoch: number, aboveEpoch: number, lost: number): Promise<void> {
    const primitive = this.primitive;
    const skip = this.skip * BigInt(1 + lost);
    this.fencing ??= (async () => {
      try {
        const outcome = await primitive.fence({
          observedEpoch,
          aboveEpoch,
          skip,
          atLeast: this.highWater.state.tags,
        });
        this.highWater.seen(outcome.epoch, outcome.identity);
        await this.highWater.persist();
        this.logger.log(
          outcome.fenced ? 'warn' : 'info',
          outcome.fenced ? 'segment.fenced' : 'segment.fence_found',
          {
            store: this.description,
            epoch: outcome.epoch,
            identity: outcome.identity,
            tags: outcome.tags,
            skip: skip.toString(),
          },
        );
      } finally {
        this.fencing = undefined;
      }
    })();
    return this.fencing;
  }

  private async record(tag: string, allocation: Allocation, epoch: number, identity: string): Promise<void> {
    const { maxId, step } = allocation;
    try {
      await this.highWater.record(
        tag,
        maxId,
        epoch,
        identity,
        kindKey(allocation.kind),
        maxId - BigInt(step),
      );
    } catch (error) {
      throw new FrondError(
        'STORE_UNAVAILABLE',
        `could not record the segment of ${tag} in ${this.highWater.path} (${(error as Error).message}); the segment is not served`,
        { cause: error },
      );
    }
  }
}

/**
 * `postgres://frond@db1:5432/ids` → `postgres:ids`: the database, whichever host serves it.
 * `sqlite:data/frond.db` → `sqlite:/srv/frond/data/frond.db`: the file, however it is spelled
 * (relative to another directory, through a symlink), so a node started another way still finds
 * what it was granted (a relative spelling lost it: 3,000 IDs served twice after a restore).
 */
export function scopeOf(description: string): string {
  if (description.startsWith('sqlite:')) return `sqlite:${realFile(description.slice('sqlite:'.length))}`;
  const match = /^([a-z]+):\/\/[^/]*\/(.*)$/.exec(description);
  return match === null ? description : `${match[1]}:${match[2]}`;
}

/** The file's absolute path with its directory's symlinks resolved (the file may not exist yet). */
function realFile(path: string): string {
  if (path === ':memory:') return path;
  const absolute = resolve(path);
  try {
    return join(realpathSync(dirname(absolute)), basename(absolute));
  } catch {
    return absolute;
  }
}

/** A grant of another kind than this node recorded for the tag: refused, never served. */
function kindChangedByHand(tag: string, recorded: string, allocation: Allocation): FrondError {
  return new FrondError(
    'INVALID_CONFIG',
    `tag ${tag} served ${kindName(kindOfKey(recorded))} IDs on this node and the store now grants it ${kindName(allocation.kind)}: its rows in frond_tag_options, frond_tag_formats or frond_high_water were changed by hand, and serving it could repeat an ID; put them back, or use a new tag name`,
  );
}

/** The kind a data dir recorded as its `kindKey`, for the message (tag-kind.ts writes the keys). */
function kindOfKey(key: string): TagKind {
  if (key.startsWith('opaque ')) {
    const [, domain = '', keyCheck = ''] = key.split(' ');
    return { opaque: { domain, keyCheck }, format: null };
  }
  if (key.startsWith('format ')) {
    try {
      const [format, timeZone] = JSON.parse(key.slice('format '.length)) as unknown[];
      if (typeof format === 'string' && typeof timeZone === 'string')
        return { opaque: null, format: { format, timeZone } };
    } catch {
      // A key this version did not write: named as plain below would mislead, so as it is.
    }
    return { opaque: null, format: { format: key, timeZone: '?' } };
  }
  return PLAIN_KIND;
}
