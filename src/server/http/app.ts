import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../../core/logger.js';
import { createIdHandlers, type IdHandlerDeps } from '../ids/id-handlers.js';
import { type LeafErrorKind, sendLeafError } from '../leaf/leaf-errors.js';
import { createOpsHandlers, type OpsDeps } from '../ops/ops-handlers.js';
import type { AccessOptions } from './access.js';
import type { RateLimiter } from './rate-limit.js';
import { ClientAbortedError } from './request-body.js';
import { NO_OBSERVER, type RequestObserver, timeRequests } from './request-timing.js';
import { sendError } from './responses.js';
import type { RouteLabel } from './route-label.js';
import { FROND_PATHS, routeTable } from './route-table.js';
import { createRouter } from './router.js';

/** The ID handlers' modes, epoch and clock, and what the routes around them need. */
export interface AppDeps extends IdHandlerDeps {
  logger: Logger;
  /** Tokens for the ID endpoints and the admin API (`AccessConfig`); open when absent. */
  access?: AccessOptions;
  /** Requests per second per client; no limit when absent. */
  rateLimiter?: RateLimiter | undefined;
  /** Sees every request's route, status and time, and every error code (metrics). */
  observer?: RequestObserver;
  /** Metrics, dashboard, readiness and the admin API; absent in the smallest setups and tests. */
  ops?: OpsDeps;
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
    ownPaths: FROND_PATHS,
    access: deps.access ?? { tokens: [], adminToken: undefined },
    rateLimiter: deps.rateLimiter,
    reportError,
    reportLeafError,
  });
  return observer === NO_OBSERVER ? route : timeRequests(route, observer);
}
