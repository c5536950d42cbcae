import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../../core/logger.js';
import type { SegmentAllocator } from '../../core/segment-allocator.js';
import type { SnowflakeService } from '../../core/snowflake-service.js';
import type { CataloguedStore } from '../../core/tag-catalogue.js';
import { createIdHandlers } from '../ids/id-handlers.js';
import { type LeafErrorKind, sendLeafError } from '../leaf/leaf-errors.js';
import type { OpaqueTags } from '../opaque/opaque-tags.js';
import { createOpsHandlers, type OpsDeps } from '../ops/ops-handlers.js';
import type { AccessOptions } from './access.js';
import type { RateLimiter } from './rate-limit.js';
import { ClientAbortedError } from './request-body.js';
import { NO_OBSERVER, type RequestObserver, timeRequests } from './request-timing.js';
import { sendError } from './responses.js';
import type { RouteLabel } from './route-label.js';
import { routeTable } from './route-table.js';
import { createRouter } from './router.js';

export interface AppDeps {
  /** Absent when segment mode is off (`--no-segment`); its store also answers the admin API and `/db`. */
  segment: SegmentAllocator<CataloguedStore> | undefined;
  /** Absent when snowflake mode is off (`--no-snowflake`). */
  snowflake: SnowflakeService | undefined;
  /** Which tags are opaque; every tag is plain when absent (tests). */
  opaque?: OpaqueTags | undefined;
  /** The epoch used to decode IDs, also when snowflake mode is off. */
  epoch: number;
  logger: Logger;
  /** Tokens for the ID endpoints and the admin API; open when absent. */
  access?: AccessOptions;
  /** Requests per second per client; no limit when absent. */
  rateLimiter?: RateLimiter | undefined;
  /** Sees every request's route, status and time, and every error code (metrics). */
  observer?: RequestObserver;
  /** Metrics, dashboard, readiness and the admin API; absent in the smallest setups and tests. */
  ops?: OpsDeps;
  /** The time of a Leaf error body (Spring Boot's `timestamp`); the system clock when absent. */
  now?: () => number;
}

export type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * The HTTP API, without `listen`: the route table (`route-table.ts`) goes straight to the allocator
 * or the generator, and an ID that is already buffered is answered without a promise on the way.
 */
export function createApp(deps: AppDeps): Handler {
  const { segment, logger } = deps;
  const observer = deps.observer ?? NO_OBSERVER;
  const reportError = (res: ServerResponse, error: unknown) => {
    // Nobody is left to answer, and the node did nothing wrong: no error log, no error count.
    if (error instanceof ClientAbortedError) {
      logger.log('debug', 'http.client_aborted', {});
      res.destroy();
      return;
    }
    observer.error(sendError(res, error, logger));
  };
  const leafOptions = {
    logger,
    now: deps.now ?? (() => Date.now()),
    toleranceMs: deps.snowflake?.clockToleranceMs,
  };
  const reportLeafError = (req: IncomingMessage, res: ServerResponse, error: unknown, kind: LeafErrorKind) =>
    observer.error(sendLeafError(req, res, error, kind, leafOptions));
  const table = routeTable(
    createIdHandlers(deps, reportError, reportLeafError),
    deps.ops && createOpsHandlers(deps.ops, segment, reportError, deps.opaque),
  );
  const route = createRouter<RouteLabel>(table, 'other', {
    access: deps.access ?? { tokens: [], adminToken: undefined },
    rateLimiter: deps.rateLimiter,
    reportError,
    reportLeafError,
  });
  return observer === NO_OBSERVER ? route : timeRequests(route, observer);
}
