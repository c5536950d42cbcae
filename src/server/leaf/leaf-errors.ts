import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import {
  ClockMovedBackwardsError,
  ERROR_CODES,
  FrondError,
  type FrondErrorCode,
  isFrondError,
} from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';

/**
 * How Leaf's endpoints fail, so that a Leaf client sees what Leaf's server sent. The expected
 * answers come from Meituan-Dianping/Leaf:
 *
 * - leaf-server/.../controller/LeafController.java: a Result with status EXCEPTION becomes a
 *   `LeafServerException(result.toString())`, which is `@ResponseStatus(INTERNAL_SERVER_ERROR)`
 *   (exception/LeafServerException.java); `Result.toString()` is `Result{id=-N, status=EXCEPTION}`
 *   (leaf-core/.../common/Result.java).
 * - leaf-core/.../segment/SegmentIDGenImpl.java: -1 the generator is not initialized, -2 the tag is
 *   not in the cache, -3 both segments of the tag are empty.
 * - leaf-core/.../snowflake/SnowflakeIDGenImpl.java: -1 the clock is still behind after waiting
 *   out a step back of at most 5 ms, -2 that wait was interrupted, -3 the clock is more than 5 ms
 *   behind.
 * - leaf-server/pom.xml: Spring Boot 1.5.18, whose DefaultErrorAttributes answer
 *   `{"timestamp":<ms>,"status":…,"error":"<reason>","exception":"<class>","message":…,"path":…}`
 *   in that order, `application/json;charset=UTF-8`; a path no handler takes (an empty key) is 404
 *   with `"message":"No message available"` and no `exception`.
 *
 * What Leaf does not have is decided here and documented in docs/leaf-compatibility.md and
 * docs/api.md: on the segment route every failure other than an unknown tag is -3 (no IDs can be
 * given now); on the snowflake route a clock behind by no more than `--clock-tolerance-ms` after
 * the wait is -1, by more -3, and every other
 * failure (worker ID lost, timestamp not recorded, shutting down) is -1, Leaf's "not initialized".
 * frond's own refusals (a token, the rate limit, a mode turned off) keep their status, in the same
 * Spring Boot shape.
 */
export type LeafErrorKind = 'segment' | 'snowflake' | 'page';

export const LEAF_JSON_TYPE = 'application/json;charset=UTF-8';

const LEAF_SERVER_EXCEPTION = 'com.sankuai.inf.leaf.server.exception.LeafServerException';

/** Refusals frond has and Leaf has not: their own status, Spring Boot's shape, no exception class. */
const OWN_STATUS: ReadonlySet<FrondErrorCode> = new Set([
  'UNAUTHORIZED',
  'FORBIDDEN',
  'RATE_LIMITED',
  'MODE_DISABLED',
  'NOT_FOUND',
  'PAYLOAD_TOO_LARGE',
  // HEAD on an ID route: Leaf answered it (and used up an ID it could not show); frond refuses it.
  'METHOD_NOT_ALLOWED',
]);

/**
 * TRACE as Tomcat 8.5.35 refuses it with its default allowTrace=false (CoyoteAdapter
 * .postParseRequest, "Filter trace method"): 405 before any servlet runs, so no Spring error body,
 * no content type and an empty body, `Allow` the methods of the servlet the path maps to, TRACE
 * left out. Every path maps to Spring's DispatcherServlet, whose methods StandardWrapper
 * .getServletMethods collects into a HashSet (TRACE, OPTIONS, then GET and HEAD for doGet, POST,
 * PUT, DELETE): the order below is that HashSet's, printed by Java 17.
 */
export class TraceNotAllowedError extends FrondError {
  readonly allow = 'HEAD, DELETE, POST, GET, OPTIONS, PUT';

  constructor() {
    super('METHOD_NOT_ALLOWED', 'TRACE method is not allowed');
  }
}

/** Spring Boot 1.5's error body, keys in its order. */
export interface SpringError {
  timestamp: number;
  status: number;
  error: string;
  exception?: string;
  message: string;
  path: string;
}

/** A failure of a Leaf endpoint, decided before it is written: Spring's fields without time and path. */
export interface LeafFailure {
  status: number;
  exception: string | undefined;
  message: string;
}

/** What Leaf's server answers for `error` on a route of `kind`; `toleranceMs` is the snowflake wait. */
export function leafFailure(error: unknown, kind: LeafErrorKind, toleranceMs = 5): LeafFailure {
  if (isFrondError(error) && error.code === 'NOT_FOUND') {
    return { status: 404, exception: undefined, message: 'No message available' };
  }
  if (isFrondError(error) && kind === 'page' && error.code === 'MODE_DISABLED') {
    // LeafMonitorController.getCache and getDb with segment mode off.
    return {
      status: 500,
      exception: 'java.lang.IllegalArgumentException',
      message: 'You should config leaf.segment.enable=true first',
    };
  }
  if (isFrondError(error) && error.code === 'INVALID_ARGUMENT' && kind === 'page') {
    // Only /decodeSnowflakeId without its parameter gets here (Spring 4.3's message).
    return {
      status: 400,
      exception: 'org.springframework.web.bind.MissingServletRequestParameterException',
      message: error.message,
    };
  }
  if (isFrondError(error) && OWN_STATUS.has(error.code)) {
    return { status: ERROR_CODES[error.code].status, exception: undefined, message: error.message };
  }
  if (kind === 'page') {
    return {
      status: 500,
      exception: isFrondError(error) ? LEAF_SERVER_EXCEPTION : 'java.lang.RuntimeException',
      message: isFrondError(error) ? error.message : 'internal error; the server log has the details',
    };
  }
  return { status: 500, exception: LEAF_SERVER_EXCEPTION, message: leafResult(error, kind, toleranceMs) };
}

/** `Result{id=-N, status=EXCEPTION}` for a failed ID request. */
export function leafResult(error: unknown, kind: 'segment' | 'snowflake', toleranceMs: number): string {
  return `Result{id=${leafResultId(error, kind, toleranceMs)}, status=EXCEPTION}`;
}

function leafResultId(error: unknown, kind: 'segment' | 'snowflake', toleranceMs: number): number {
  if (kind === 'segment') {
    // A tag Leaf would not find in its cache: no row, or a name no row can have.
    return isFrondError(error, 'TAG_NOT_FOUND') || isFrondError(error, 'INVALID_TAG') ? -2 : -3;
  }
  if (error instanceof ClockMovedBackwardsError) return error.offsetMs <= toleranceMs ? -1 : -3;
  return -1;
}

/** The body and headers of a Spring Boot error; `path` is the request's path as sent (no query). */
export function springError(failure: LeafFailure, path: string, now: number): SpringError {
  const body: SpringError = {
    timestamp: now,
    status: failure.status,
    error: STATUS_CODES[failure.status] ?? 'Error',
  } as SpringError;
  if (failure.exception !== undefined) body.exception = failure.exception;
  body.message = failure.message;
  body.path = path;
  return body;
}

/** Answers `error` on a Leaf endpoint as Leaf's server would; answers the frond code for metrics. */
export function sendLeafError(
  req: IncomingMessage,
  res: ServerResponse,
  error: unknown,
  kind: LeafErrorKind,
  options: { logger: Logger; now: () => number; toleranceMs?: number | undefined },
): FrondErrorCode {
  if (!isFrondError(error)) {
    options.logger.log('error', 'http.internal_error', {
      error: error instanceof Error ? error.stack : String(error),
    });
  }
  const code: FrondErrorCode = isFrondError(error) ? error.code : 'INTERNAL';
  if (res.headersSent) {
    res.destroy();
    return code;
  }
  if (error instanceof TraceNotAllowedError) {
    res.writeHead(405, { allow: error.allow, 'content-length': 0 });
    res.end();
    return code;
  }
  const url = req.url ?? '/';
  const mark = url.indexOf('?');
  const failure = leafFailure(error, kind, options.toleranceMs);
  const json = JSON.stringify(springError(failure, mark === -1 ? url : url.slice(0, mark), options.now()));
  const headers: Record<string, string | number> = {
    'content-type': LEAF_JSON_TYPE,
    'content-length': Buffer.byteLength(json),
  };
  if (isFrondError(error, 'RATE_LIMITED')) headers['retry-after'] = '1';
  const allow = (error as { allow?: unknown } | undefined)?.allow;
  if (isFrondError(error, 'METHOD_NOT_ALLOWED') && typeof allow === 'string') headers.allow = allow;
  res.writeHead(failure.status, headers);
  res.end(json);
  return code;
}

/** Spring 4.3's MissingServletRequestParameterException message for a String parameter. */
export function missingParameter(name: string): FrondError {
  return new FrondError('INVALID_ARGUMENT', `Required String parameter '${name}' is not present`);
}
