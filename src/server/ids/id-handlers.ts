import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SegmentAllocator } from '../../core/segment-allocator.js';
import type { SnowflakeService } from '../../core/snowflake-service.js';
import type { CataloguedStore } from '../../core/tag-catalogue.js';
import { sendJson } from '../http/responses.js';
import type { RouteHandler } from '../http/router.js';
import type { LeafErrorKind } from '../leaf/leaf-errors.js';
import type { OpaqueTags } from '../opaque/opaque-tags.js';
import { TagIssuer } from '../opaque/tag-issuer.js';
import { FROND_VERSION } from '../ops/version.js';
import type { SnowflakeConfig } from '../start/serve-config.js';
import { idModes } from './id-modes.js';
import { createLeafHandlers, type LeafHandlers } from './leaf-handlers.js';
import { createV1Handlers, type V1Handlers } from './v1-handlers.js';

/** `layout` (`--snowflake-layout`, `--time-unit-ms`, `--epoch`) decodes IDs, also when snowflake mode is off. */
export interface IdHandlerDeps extends Pick<SnowflakeConfig, 'layout'> {
  /** Absent when segment mode is off (`--no-segment`); its store also answers the admin API and `/db`. */
  segment: SegmentAllocator<CataloguedStore> | undefined;
  /** Absent when snowflake mode is off (`--no-snowflake`). */
  snowflake: SnowflakeService | undefined;
  /** Which tags are opaque (`opaque/opaque-tags.ts`); every tag is plain when absent. */
  opaque?: OpaqueTags | undefined;
  /**
   * The node's clock: what a built `/cache` or `/db` page is kept by, and a Leaf error body's time
   * (Spring Boot's `timestamp`); the system clock when absent.
   */
  now?: () => number;
  /** `/readyz`'s answer, which `/healthz` reports without acting on it. */
  ops?: { readiness(): { ready: boolean } } | undefined;
}

/** The handlers behind the ID routes, Leaf's pages and `/healthz`; `http/route-table.ts` says where each answers. */
export interface IdHandlers extends LeafHandlers, V1Handlers {
  health: RouteHandler;
}

/**
 * Straight to the allocator or the generator: an ID that is already buffered is answered without a
 * promise on the way. Plain or opaque is the `TagIssuer`'s to decide, for every route that takes
 * segment IDs. `reportError` answers what fails after the handler has returned.
 */
export function createIdHandlers(
  deps: IdHandlerDeps,
  reportError: (res: ServerResponse, error: unknown) => void,
  reportLeafError: (req: IncomingMessage, res: ServerResponse, error: unknown, kind: LeafErrorKind) => void,
): IdHandlers {
  const { segment, snowflake, layout, opaque } = deps;
  const modes = idModes(segment && new TagIssuer(segment, opaque), snowflake);
  const now = deps.now ?? (() => Date.now());
  return {
    ...createLeafHandlers({ segment, layout, now }, modes, reportLeafError),
    ...createV1Handlers(layout, modes, reportError),
    health: healthHandler(deps),
  };
}

/**
 * Liveness only: 200 while the process answers, whatever the store says (a restart would not
 * bring a store back). Whether to send traffic is /readyz's answer, shown here as `ready`.
 */
function healthHandler(deps: IdHandlerDeps): RouteHandler {
  const { segment, snowflake } = deps;
  return (_req, res) => {
    sendJson(res, 200, {
      status: 'ok',
      version: FROND_VERSION,
      checks: 'the process answers; send traffic by /readyz',
      ready: deps.ops ? deps.ops.readiness().ready : null,
      segment: segment
        ? {
            store: segment.store.description,
            reachable: segment.storeReachable,
            tags: segment.tags().length,
          }
        : null,
      snowflake: snowflake
        ? {
            workerId: snowflake.workerId,
            epoch: snowflake.epoch,
            layout: snowflake.layout.bits,
            timeUnitMs: snowflake.layout.timeUnitMs,
            available: snowflake.available,
          }
        : null,
    });
  };
}
