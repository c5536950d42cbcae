/**
 * Codes the server sends in `{"error": {"code", "message"}}`, and whether a call that got one may
 * succeed later. Copied from frond's error registry (names and flags only, so the client imports
 * nothing from the server); test/server-error-codes.test.ts fails when the two differ.
 */
export const SERVER_ERROR_CODES = {
  INVALID_ARGUMENT: { retryable: false },
  INVALID_TAG: { retryable: false },
  INVALID_COUNT: { retryable: false },
  INVALID_ID: { retryable: false },
  NOT_FOUND: { retryable: false },
  METHOD_NOT_ALLOWED: { retryable: false },
  MODE_DISABLED: { retryable: false },
  TAG_NOT_FOUND: { retryable: false },
  OPAQUE_SECRET_MISSING: { retryable: true },
  OPAQUE_SECRET_MISMATCH: { retryable: true },
  OPAQUE_TAG_FIXED: { retryable: false },
  OPAQUE_NO_RANGES: { retryable: false },
  FORMAT_TAG_FIXED: { retryable: false },
  FORMAT_NO_RANGES: { retryable: false },
  TAG_KIND_CHANGED: { retryable: true },
  TAG_EXISTS: { retryable: false },
  UNAUTHORIZED: { retryable: false },
  FORBIDDEN: { retryable: false },
  PAYLOAD_TOO_LARGE: { retryable: false },
  RATE_LIMITED: { retryable: true },
  SEGMENT_UNAVAILABLE: { retryable: true },
  STORE_UNAVAILABLE: { retryable: true },
  SEGMENT_REGRESSED: { retryable: true },
  ID_RANGE_EXHAUSTED: { retryable: false },
  CLOCK_MOVED_BACKWARDS: { retryable: true },
  SEQUENCE_EXHAUSTED: { retryable: true },
  TIMESTAMP_NOT_RECORDED: { retryable: true },
  TIMESTAMP_OVERFLOW: { retryable: false },
  WORKER_ID_UNAVAILABLE: { retryable: true },
  SHUTTING_DOWN: { retryable: true },
  INVALID_CONFIG: { retryable: false },
  INTERNAL: { retryable: false },
} as const satisfies Record<string, { readonly retryable: boolean }>;

export type FrondServerErrorCode = keyof typeof SERVER_ERROR_CODES;

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

/** Every code this version knows: the server's and the client's own. */
export type FrondClientErrorCode = FrondServerErrorCode | FrondClientOwnErrorCode;

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
    /** A known code, or one from a server newer than this client, passed on as it came. */
    readonly code: FrondClientErrorCode | (string & {}),
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

/**
 * True for a `FrondClientError`, and with `code`, only for that code. `code` is one this version
 * knows, so a misspelt one does not compile.
 */
export function isFrondClientError(error: unknown, code?: FrondClientErrorCode): error is FrondClientError {
  return error instanceof FrondClientError && (code === undefined || error.code === code);
}

export function closedError(): FrondClientError {
  return new FrondClientError('CLIENT_CLOSED', 'the frond client is closed');
}
