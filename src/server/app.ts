import type { IncomingMessage, ServerResponse } from 'node:http';
import { FrondError, isFrondError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { SegmentAllocator } from '../core/segment-allocator.js';
import { decomposeSnowflake, parseSnowflakeId } from '../core/snowflake-layout.js';
import type { SnowflakeService } from '../core/snowflake-service.js';
import { assertValidTag } from '../core/tag.js';
import type { TagStore } from '../core/tag-admin.js';
import { type AccessOptions, checkIdAccess } from './access.js';
import { idsJson } from './ids-json.js';
import { cachePage, dbPage, leafDecodeBody } from './leaf-pages.js';
import { NO_OBSERVER, type RequestObserver } from './metrics.js';
import { createOpsRoutes, type OpsDeps } from './ops-routes.js';
import type { RateLimiter } from './rate-limit.js';
import { sendError, sendHtml, sendJson, sendJsonBytes, sendText } from './responses.js';

export interface AppDeps {
  /** Absent when segment mode is off (`--no-segment`); its store also answers the admin API and `/db`. */
  segment: SegmentAllocator<TagStore> | undefined;
  /** Absent when snowflake mode is off (`--no-snowflake`). */
  snowflake: SnowflakeService | undefined;
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
}

export type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** The largest batch one request may ask for (Tinyid's batch.size.max is the same). */
export const MAX_COUNT = 10_000;

const LEAF_SEGMENT = '/api/segment/get/';
const LEAF_SNOWFLAKE = '/api/snowflake/get/';
const V1_SEGMENT = '/v1/segment/';
const V1_DECODE = '/v1/snowflake/decode/';

/**
 * The HTTP API, without `listen`: routes go straight to the allocator or the generator, and an ID
 * that is already buffered is answered without a promise on the way.
 */
export function createApp(deps: AppDeps): Handler {
  const { segment, snowflake, epoch, logger } = deps;
  const access: AccessOptions = deps.access ?? { tokens: [], adminToken: undefined };
  const observer = deps.observer ?? NO_OBSERVER;
  const ops = deps.ops && createOpsRoutes(deps.ops, segment, access);

  const reportError = (res: ServerResponse, error: unknown) => observer.error(sendError(res, error, logger));
  const fail = (res: ServerResponse) => (error: unknown) => reportError(res, error);

  function needSegment(): SegmentAllocator<TagStore> {
    if (segment === undefined) throw disabled('segment', '--no-segment');
    return segment;
  }

  function needSnowflake(): SnowflakeService {
    if (snowflake === undefined) throw disabled('snowflake', '--no-snowflake');
    return snowflake;
  }

  function leafSegment(rawTag: string, res: ServerResponse): void {
    const allocator = needSegment();
    const tag = assertValidTag(stripSlash(rawTag));
    const id = allocator.tryNext(tag);
    if (id !== undefined) return sendText(res, String(id));
    allocator.next(tag).then((value) => sendText(res, String(value)), fail(res));
  }

  function leafSnowflake(key: string, res: ServerResponse): void {
    const service = needSnowflake();
    // Leaf ignores the key but routes only a non-empty one.
    if (stripSlash(key) === '')
      throw new FrondError('NOT_FOUND', 'no route: the key after /api/snowflake/get/ is empty');
    let id: bigint;
    try {
      id = service.tryNext();
    } catch {
      // The slow path waits out a small clock step back, or reports why it cannot.
      service.next().then((value) => sendText(res, value.toString()), fail(res));
      return;
    }
    sendText(res, id.toString());
  }

  function v1Segment(rawTag: string, query: string, res: ServerResponse): void {
    const allocator = needSegment();
    const tag = assertValidTag(rawTag);
    const count = parseCount(query);
    allocator.nextMany(tag, count).then((ids) => sendJsonBytes(res, 200, idsJson(ids)), fail(res));
  }

  function v1Snowflake(query: string, res: ServerResponse): void {
    const service = needSnowflake();
    const count = parseCount(query);
    service.nextMany(count).then((ids) => sendJsonBytes(res, 200, idsJson(ids)), fail(res));
  }

  function leafDecode(query: string, res: ServerResponse): void {
    const text = new URLSearchParams(query).get('snowflakeId');
    if (text === null) throw new FrondError('INVALID_ARGUMENT', 'missing query parameter snowflakeId');
    try {
      sendJson(res, 200, leafDecodeBody(decomposeSnowflake(parseSnowflakeId(text), epoch)));
    } catch (error) {
      if (!isFrondError(error, 'INVALID_ID')) throw error;
      // Leaf answers 200 with errorMsg for an ID it cannot parse; clients may rely on it.
      sendJson(res, 200, { errorMsg: error.message });
    }
  }

  function v1Decode(text: string, res: ServerResponse): void {
    const id = parseSnowflakeId(text);
    const parts = decomposeSnowflake(id, epoch);
    sendJson(res, 200, {
      id: id.toString(),
      timestamp: parts.timestamp,
      time: new Date(parts.timestamp).toISOString(),
      workerId: parts.workerId,
      sequence: parts.sequence,
    });
  }

  function health(res: ServerResponse): void {
    sendJson(res, 200, {
      status: 'ok',
      segment: segment ? { store: segment.store.description, tags: segment.tags().length } : null,
      snowflake: snowflake ? { workerId: snowflake.workerId, epoch: snowflake.epoch } : null,
    });
  }

  function route(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '/';
    const mark = url.indexOf('?');
    const path = mark === -1 ? url : url.slice(0, mark);
    const query = mark === -1 ? '' : url.slice(mark + 1);
    deps.rateLimiter?.take(req.socket.remoteAddress ?? 'unknown');
    // Leaf's routes answer any method, as Spring MVC did; frond's own answer GET only.
    if (path.startsWith(LEAF_SEGMENT)) {
      checkIdAccess(req, query, access);
      return leafSegment(path.slice(LEAF_SEGMENT.length), res);
    }
    if (path.startsWith(LEAF_SNOWFLAKE)) {
      checkIdAccess(req, query, access);
      return leafSnowflake(path.slice(LEAF_SNOWFLAKE.length), res);
    }
    if (path === '/decodeSnowflakeId') return leafDecode(query, res);
    if (path === '/cache') return sendHtml(res, cachePage(needSegment().states()));
    if (path === '/db') {
      needSegment()
        .store.listRows()
        .then((rows) => sendHtml(res, dbPage(rows)), fail(res));
      return;
    }
    if (ops?.(req, res, path, fail(res))) return;
    if (req.method !== 'GET') {
      throw new FrondError('METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${path}; use GET`);
    }
    if (path.startsWith(V1_DECODE)) return v1Decode(path.slice(V1_DECODE.length), res);
    if (path.startsWith(V1_SEGMENT)) {
      checkIdAccess(req, query, access);
      return v1Segment(path.slice(V1_SEGMENT.length), query, res);
    }
    if (path === '/v1/snowflake') {
      checkIdAccess(req, query, access);
      return v1Snowflake(query, res);
    }
    if (path === '/healthz') return health(res);
    throw new FrondError('NOT_FOUND', `no route for ${path.slice(0, 200)}`);
  }

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    try {
      route(req, res);
    } catch (error) {
      reportError(res, error);
    }
  };
  if (observer === NO_OBSERVER) return handle;
  const observe = (req: IncomingMessage, res: ServerResponse, started: number) =>
    observer.request(routeOf(req.url ?? '/'), res.statusCode, (performance.now() - started) / 1000);
  return (req, res) => {
    const started = performance.now();
    handle(req, res);
    // A buffered ID is answered before `handle` returns, and measured right away: a 'finish' listener
    // on every response cost 0.7 µs of the 12 µs of CPU a one-ID request takes (bench/README.md).
    if (res.writableEnded) observe(req, res, started);
    else res.once('finish', () => observe(req, res, started));
  };
}

/** A small fixed set of route labels, so metrics cannot grow with tag names or junk paths. */
export function routeOf(url: string): string {
  if (url.startsWith(LEAF_SEGMENT)) return 'leaf_segment';
  if (url.startsWith(LEAF_SNOWFLAKE)) return 'leaf_snowflake';
  if (url.startsWith(V1_DECODE) || url.startsWith('/decodeSnowflakeId')) return 'decode';
  if (url.startsWith(V1_SEGMENT)) return 'v1_segment';
  if (url.startsWith('/v1/snowflake')) return 'v1_snowflake';
  if (url.startsWith('/v1/tags')) return 'admin';
  for (const page of ['/metrics', '/dashboard', '/v1/stats', '/healthz', '/readyz', '/cache', '/db']) {
    if (url === page || url.startsWith(`${page}?`)) return page.slice(page.lastIndexOf('/') + 1);
  }
  return 'other';
}

function stripSlash(text: string): string {
  // Leaf (Spring MVC) serves `/api/segment/get/abc/` as `abc`.
  return text.endsWith('/') ? text.slice(0, -1) : text;
}

function disabled(mode: string, flag: string): FrondError {
  return new FrondError('MODE_DISABLED', `${mode} mode is off on this node (started with ${flag})`);
}

/** `count` from the query: 1 when absent, else an integer from 1 to 10,000. */
export function parseCount(query: string): number {
  if (query === '') return 1;
  const text = new URLSearchParams(query).get('count');
  if (text === null) return 1;
  const count = /^[0-9]{1,6}$/.test(text) ? Number(text) : Number.NaN;
  if (!(count >= 1 && count <= MAX_COUNT)) {
    throw new FrondError(
      'INVALID_COUNT',
      `invalid count ${JSON.stringify(text.slice(0, 40))}: use an integer from 1 to ${MAX_COUNT}`,
    );
  }
  return count;
}
