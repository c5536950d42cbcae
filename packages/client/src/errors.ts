/**
 * Codes the server sends in `{"error": {"code", "message"}}` (from frond's `src/core/errors.ts`;
 * copied as names only, so the client imports nothing from the server).
 */
export type FrondServerErrorCode =
  | 'INVALID_ARGUMENT'
  | 'INVALID_TAG'
  | 'INVALID_COUNT'
  | 'INVALID_ID'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'MODE_DISABLED'
  | 'TAG_NOT_FOUND'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'RATE_LIMITED'
  | 'SEGMENT_UNAVAILABLE'
  | 'STORE_UNAVAILABLE'
  | 'SEGMENT_REGRESSED'
  | 'ID_RANGE_EXHAUSTED'
  | 'CLOCK_MOVED_BACKWARDS'
  | 'SEQUENCE_EXHAUSTED'
  | 'TIMESTAMP_NOT_RECORDED'
  | 'TIMESTAMP_OVERFLOW'
  | 'WORKER_ID_UNAVAILABLE'
  | 'SHUTTING_DOWN'
  | 'INTERNAL';

/** Failures the client itself detects. */
export type FrondClientOwnErrorCode =
  /** The connection failed or broke (refused, reset, DNS). Retried on the next URL. */
  | 'NETWORK_ERROR'
  /** No complete answer within `timeoutMs`. Retried on the next URL. */
  | 'TIMEOUT'
  /** A non-2xx answer without frond's error body (a proxy's page, say); `status` tells which. */
  | 'HTTP_ERROR'
  /** A 2xx answer that is not `{"ids": [...]}` with increasing decimal IDs. */
  | 'INVALID_RESPONSE'
  /** `idType: 'number'` was asked for and the ID is above 2^53 - 1 (every snowflake ID is). */
  | 'UNSAFE_INTEGER'
  /** `close()` was called: pending calls reject with this, and so do new ones. */
  | 'CLIENT_CLOSED';

/** A server code, a client code, or (from a newer server) a code this version does not know yet. */
export type FrondClientErrorCode = FrondServerErrorCode | FrondClientOwnErrorCode | (string & {});

export interface FrondClientErrorDetails {
  /** The HTTP status when a server answered; `undefined` for network errors and local checks. */
  status?: number | undefined;
  /** Whether the same call may succeed later (503, 429, network errors, timeouts). */
  retryable?: boolean;
  /** The server URL of the last attempt, when there was one. */
  url?: string | undefined;
  /** Requests made before giving up (0 for local checks). */
  attempts?: number;
  cause?: unknown;
}

/** Every failure of `@frond/client` is one of these, with a stable `code`. */
export class FrondClientError extends Error {
  override readonly name = 'FrondClientError';
  readonly status: number | undefined;
  readonly retryable: boolean;
  readonly url: string | undefined;
  readonly attempts: number;

  constructor(
    readonly code: FrondClientErrorCode,
    message: string,
    details: FrondClientErrorDetails = {},
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.status = details.status;
    this.retryable = details.retryable ?? false;
    this.url = details.url;
    this.attempts = details.attempts ?? 0;
  }
}

/** True for a `FrondClientError`, and with `code`, only for that code. */
export function isFrondClientError(error: unknown, code?: FrondClientErrorCode): error is FrondClientError {
  return error instanceof FrondClientError && (code === undefined || error.code === code);
}

export function closedError(): FrondClientError {
  return new FrondClientError('CLIENT_CLOSED', 'the frond client is closed');
}
