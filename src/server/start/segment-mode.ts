import type { Clock } from '../../core/clock.js';
import { describeError, isFrondError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { CoreObserver } from '../../core/observer.js';
import { DEFAULT_SEGMENT_ALLOCATOR_OPTIONS, SegmentAllocator } from '../../core/segment-allocator.js';
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

/** Segment mode, open: the fenced store, the allocator on it, and which of its tags are opaque. */
export interface SegmentMode {
  store: CataloguedStore;
  allocator: SegmentAllocator<CataloguedStore>;
  opaque: OpaqueTags;
  /** The tags the configuration declares opaque, kept checked; absent when it declares none. */
  declaration: OpaqueDeclaration | undefined;
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
): Promise<SegmentMode> {
  // Every load goes through the fence and the data dir's high-water (FencedStore, wrapping the
  // store's primitive); the catalogue beside it refuses as opaque a name this node served
  // (src/stores/fencing/served-store.ts). The store is closed whatever fails after it opened (an
  // unreadable high-water file throws in FencedStore's constructor): SQLite's worker thread would
  // otherwise keep a failed start alive.
  const inner = openStoreFor(config.store, config.storeSetting ?? `--store ${config.store}`, { logger });
  cleanups.push(() => inner.close());
  await checkServing(inner, logger);
  const store = servedStore(inner, {
    dataDir: config.dataDir,
    fenceSkip: config.fenceSkip,
    logger,
  });
  const allocator = new SegmentAllocator(
    store,
    clock,
    logger,
    {
      ...DEFAULT_SEGMENT_ALLOCATOR_OPTIONS,
      segmentWaitMs: config.segmentWaitMs,
      tagRefreshMs: config.tagRefreshMs,
      stepRules: { ...LEAF_STEP_RULES, maxStep: config.maxStep },
    },
    observer,
  );
  await allocator.start();
  cleanups.push(() => allocator.close());
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
  return { store, allocator, opaque, declaration };
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
