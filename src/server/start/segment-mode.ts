import { type Clock, within } from '../../core/clock.js';
import { describeError, isFrondError } from '../../core/errors.js';
import type { Gap, HeldRange } from '../../core/id-gaps.js';
import type { Logger } from '../../core/logger.js';
import type { CoreObserver } from '../../core/observer.js';
import {
  DEFAULT_SEGMENT_ALLOCATOR_OPTIONS,
  type HandBackSummary,
  SegmentAllocator,
} from '../../core/segment-allocator.js';
import { LEAF_STEP_RULES } from '../../core/segment-step.js';
import type { CataloguedStore } from '../../core/tag-catalogue.js';
import { servedStore } from '../../stores/fencing/served-store.js';
import type { OpenedStore } from '../../stores/store-backend.js';
import { FormatDeclaration } from '../opaque/format-config.js';
import { FormatRetention } from '../opaque/format-retention.js';
import { OpaqueDeclaration } from '../opaque/opaque-config.js';
import { OpaqueSecret } from '../opaque/opaque-keys.js';
import { OpaqueTags } from '../opaque/opaque-tags.js';
import type { Cleanups } from './cleanups.js';
import type { SegmentConfig, StartConfig } from './serve-config.js';
import { openStoreFor } from './store-open.js';

/**
 * How long the stop waits for the store to close its connections before it goes on without. A
 * pool closes in milliseconds; only a query that never answers (a hand-back that timed out) holds
 * it, and then every second here is one more the stop overruns --hand-back-timeout-ms by. A
 * transaction cut by the exit rolls back, and the data dir reports its grants at the next start.
 */
const STORE_CLOSE_MS = 1_000;

/** Segment mode, open: the fenced store, the allocator on it, and which of its tags are opaque. */
export interface SegmentMode {
  store: CataloguedStore;
  allocator: SegmentAllocator<CataloguedStore>;
  opaque: OpaqueTags;
  /** The tags the configuration declares opaque, kept checked; absent when it declares none. */
  declaration: OpaqueDeclaration | undefined;
  /**
   * Records gaps in the store (frond_gaps) as they are given: a client's unused range
   * (`POST /v1/tags/{tag}/gaps`). Rejects when the database does not answer.
   */
  recordGaps(gaps: readonly Gap[]): Promise<void>;
  /**
   * A clean stop's hand-back (`SegmentAllocator.handBackAll`) with the opaque tags' look-ahead,
   * within `timeoutMs` in all. Never rejects; run once, after the ports stopped taking requests.
   */
  handBack(timeoutMs: number): Promise<HandBackSummary>;
}

/** What the node is called in frond_gaps, and who hears of the IDs it gives up. */
export interface SegmentModeIdentity {
  /** host:port of the node's HTTP port (frond_gaps' `node`). */
  node: string;
}

/**
 * Opens the store, starts the allocator (its loads reported to `observer`) and reads the opaque-ID
 * secret and the declared opaque tags; each step's close goes into `cleanups` as soon as it opened.
 */
export async function openSegmentMode(
  config: SegmentConfig & Pick<StartConfig, 'dataDir'>,
  clock: Clock,
  logger: Logger,
  observer: CoreObserver,
  cleanups: Cleanups,
  identity: SegmentModeIdentity = { node: 'unknown' },
): Promise<SegmentMode> {
  // Every load goes through the fence and the data dir's high-water (FencedStore, wrapping the
  // store's primitive); the catalogue beside it refuses as opaque a name this node served
  // (src/stores/fencing/served-store.ts). The store is closed whatever fails after it opened (an
  // unreadable high-water file throws in FencedStore's constructor): SQLite's worker thread would
  // otherwise keep a failed start alive.
  const inner = openStoreFor(config.store, config.storeSetting ?? `--store ${config.store}`, { logger });
  // Bounded: a pool whose query never answers (a hand-back that timed out) must not hold the stop.
  cleanups.push(() => within(clock, inner.close(), STORE_CLOSE_MS));
  await checkServing(inner, logger);
  const store = servedStore(inner, {
    dataDir: config.dataDir,
    fenceSkip: config.fenceSkip,
    logger,
    node: identity.node,
    // The crash gaps the data dir reports at this start count in frond_ids_given_up_total.
    observer,
  });
  const dense = new Set(config.denseTags ?? []);
  const allocator = new SegmentAllocator(
    store,
    clock,
    logger,
    {
      ...DEFAULT_SEGMENT_ALLOCATOR_OPTIONS,
      segmentWaitMs: config.segmentWaitMs,
      tagRefreshMs: config.tagRefreshMs,
      stepRules: { ...LEAF_STEP_RULES, maxStep: config.maxStep },
      ...(dense.size > 0 && { dense: (tag: string) => dense.has(tag) }),
    },
    observer,
  );
  await allocator.start();
  cleanups.push(() => allocator.close());
  if (dense.size > 0) void warnUnknownDense(store, [...dense], logger);
  // Read once, never logged: only the fingerprint is shown (/readyz, frond tag list).
  const secret =
    config.opaqueSecret === undefined ? OpaqueSecret.fromEnvironment() : (config.opaqueSecret ?? undefined);
  const opaque = new OpaqueTags(allocator, secret, () => clock.now());
  let declaration: OpaqueDeclaration | undefined;
  if (config.opaqueTags !== undefined && config.opaqueTags.length > 0) {
    const declared = new OpaqueDeclaration(allocator.store, opaque, config.opaqueTags, clock, logger);
    await declared.start();
    cleanups.push(() => declared.close());
    declaration = declared;
  }
  if (config.formatTags !== undefined && config.formatTags.length > 0) {
    const declared = new FormatDeclaration(allocator.store, config.formatTags, clock, logger);
    await declared.start();
    cleanups.push(() => declared.close());
  }
  // A store that is down at start leaves every tag to be read on its first request.
  await opaque.preload().catch(() => {});
  // Formatted tags' counters of periods long past, removed on every node (format-retention.ts).
  const retention = new FormatRetention(allocator.store, clock, logger, config.formatRetentionDays);
  retention.start();
  cleanups.push(() => retention.close());
  let handingBack: Promise<HandBackSummary> | undefined;
  return {
    store,
    allocator,
    opaque,
    declaration,
    recordGaps: (gaps) => inner.recordGaps(gaps),
    handBack(timeoutMs) {
      handingBack ??= handBackSegments(allocator, opaque, timeoutMs, clock, logger);
      return handingBack;
    },
  };
}

/**
 * The allocator's hand-back with what the opaque tags took ahead of requests and never served
 * (their look-ahead, given back with the buffer's tail or recorded as `opaque_look_ahead`). The
 * look-ahead is read within the same bound: a refill waiting on the database must not hold the stop.
 */
async function handBackSegments(
  allocator: SegmentAllocator<CataloguedStore>,
  opaque: OpaqueTags,
  timeoutMs: number,
  clock: Clock,
  logger: Logger,
): Promise<HandBackSummary> {
  const started = clock.now();
  let extra: Map<string, HeldRange[]> = new Map();
  try {
    const read = await within(clock, opaque.lookAhead(), Math.max(0, timeoutMs));
    if (read !== undefined) extra = read.value;
  } catch (error) {
    logger.log('warn', 'segment.look_ahead_unread', { error: describeError(error) });
  }
  return allocator.handBackAll({ extra, timeoutMs: Math.max(0, timeoutMs - (clock.now() - started)) });
}

/** A `--dense-tag` the table does not hold is most likely a typing mistake: said once, at start. */
async function warnUnknownDense(store: CataloguedStore, dense: string[], logger: Logger): Promise<void> {
  try {
    const known = new Set(await store.listTags());
    for (const tag of dense)
      if (!known.has(tag))
        logger.log('warn', 'config.warning', {
          message: `--dense-tag ${tag}: the table has no tag ${tag} (yet); it is numbered densely once it is added`,
        });
  } catch (error) {
    logger.log('warn', 'config.warning', {
      message: `--dense-tag: the tag list could not be read to check the names (${describeError(error)})`,
    });
  }
}

/**
 * The start is refused when the store answers that this account cannot serve: frond's tables
 * missing and not to be created, or a privilege serving needs not granted (one line of
 * INVALID_CONFIG naming them). A store that does not answer is no reason to refuse: the node starts,
 * as it does with its database down, and serves once it is back (its loads then say what is
 * missing, and so does `/readyz`).
 */
async function checkServing(store: OpenedStore, logger: Logger): Promise<void> {
  try {
    await store.checkServing?.();
  } catch (error) {
    if (!isFrondError(error, 'STORE_UNAVAILABLE')) throw error;
    logger.log('warn', 'store.unchecked', { store: store.description, error: describeError(error) });
  }
}
