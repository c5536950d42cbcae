import { Metadata, type ServerErrorResponse, status } from '@grpc/grpc-js';
import { FrondError, type FrondErrorCode, isFrondError, retryAfterOf } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';

/**
 * The gRPC status each frond code is answered with: the one place the mapping lives (as
 * `http/http-status.ts` is for HTTP). A new code in `src/core/errors.ts` fails the typecheck here
 * until it has a row. UNAVAILABLE is what gRPC clients retry on their own, so every code that
 * HTTP answers 503 (retry later, or on another node) is UNAVAILABLE here too; RESOURCE_EXHAUSTED
 * is a limit: too large, too many requests (429), or a tag's or the layout's IDs used up.
 */
export const GRPC_STATUS = {
  INVALID_ARGUMENT: status.INVALID_ARGUMENT,
  INVALID_TAG: status.INVALID_ARGUMENT,
  INVALID_COUNT: status.INVALID_ARGUMENT,
  INVALID_ID: status.INVALID_ARGUMENT,
  NOT_FOUND: status.NOT_FOUND,
  METHOD_NOT_ALLOWED: status.UNIMPLEMENTED,
  // Segment or snowflake mode is off on this node: the method exists, the node does not serve it.
  MODE_DISABLED: status.UNIMPLEMENTED,
  TAG_NOT_FOUND: status.NOT_FOUND,
  TAG_EXISTS: status.ALREADY_EXISTS,
  UNAUTHORIZED: status.UNAUTHENTICATED,
  FORBIDDEN: status.PERMISSION_DENIED,
  PAYLOAD_TOO_LARGE: status.RESOURCE_EXHAUSTED,
  RATE_LIMITED: status.RESOURCE_EXHAUSTED,
  SEGMENT_UNAVAILABLE: status.UNAVAILABLE,
  STORE_UNAVAILABLE: status.UNAVAILABLE,
  SEGMENT_REGRESSED: status.UNAVAILABLE,
  ID_RANGE_EXHAUSTED: status.RESOURCE_EXHAUSTED,
  CLOCK_MOVED_BACKWARDS: status.UNAVAILABLE,
  // A time unit's sequence, not the IDs: the next unit has a fresh one, so a retry succeeds.
  SEQUENCE_EXHAUSTED: status.UNAVAILABLE,
  TIMESTAMP_NOT_RECORDED: status.UNAVAILABLE,
  TIMESTAMP_OVERFLOW: status.RESOURCE_EXHAUSTED,
  WORKER_ID_UNAVAILABLE: status.UNAVAILABLE,
  SHUTTING_DOWN: status.UNAVAILABLE,
  OPAQUE_SECRET_MISSING: status.UNAVAILABLE,
  OPAQUE_SECRET_MISMATCH: status.UNAVAILABLE,
  OPAQUE_TAG_FIXED: status.FAILED_PRECONDITION,
  OPAQUE_NO_RANGES: status.FAILED_PRECONDITION,
  FORMAT_TAG_FIXED: status.FAILED_PRECONDITION,
  FORMAT_NO_RANGES: status.FAILED_PRECONDITION,
  TAG_KIND_CHANGED: status.UNAVAILABLE,
  INVALID_CONFIG: status.INTERNAL,
  INTERNAL: status.INTERNAL,
} as const satisfies Record<FrondErrorCode, status>;

/** The trailing metadata key that carries frond's code, as HTTP's `{"error":{"code"}}` does. */
export const FROND_CODE_KEY = 'frond-code';
/** The trailing metadata key with the seconds to wait, as HTTP's `Retry-After` (a formatted tag's period used up). */
export const RETRY_AFTER_KEY = 'retry-after';

/**
 * The status a failed call ends with: the code's gRPC status, `CODE: message` as its details and
 * the code in trailing metadata (`frond-code`). Anything that is not a FrondError is a bug: the
 * client gets INTERNAL and the stack goes to the log, never to the client.
 */
export function grpcError(error: unknown, logger: Logger): ServerErrorResponse {
  let failure: FrondError;
  if (isFrondError(error)) {
    failure = error;
  } else {
    logger.log('error', 'grpc.internal_error', {
      error: error instanceof Error ? error.stack : String(error),
    });
    failure = new FrondError('INTERNAL', 'internal error; the server log has the details');
  }
  const metadata = new Metadata();
  metadata.set(FROND_CODE_KEY, failure.code);
  // A failure that ends at a known moment is UNAVAILABLE, as HTTP answers it 503 (http-status.ts).
  const retryAfter = retryAfterOf(failure);
  if (retryAfter !== undefined) metadata.set(RETRY_AFTER_KEY, String(retryAfter));
  const details = `${failure.code}: ${failure.message}`;
  const code = retryAfter === undefined ? GRPC_STATUS[failure.code] : status.UNAVAILABLE;
  return Object.assign(new Error(details), { code, details, metadata });
}
