/** What one error code means at every layer; pure data, read by the server, the CLI and the core. */
export interface ErrorCodeSpec {
  /** The HTTP status of the answer (`src/server/http/http-status.ts`). */
  readonly status: number;
  /**
   * Whether the same call may succeed later: the server adds `retry-after: 1`, and the SDK retries
   * (it decides by status, 429 and 503, which a test keeps in step with this flag).
   */
  readonly retryable: boolean;
  /**
   * A segment load that failed with this code reaches the caller as it is: another load cannot mend
   * it. Any other load failure is answered as SEGMENT_UNAVAILABLE, which the client retries.
   */
  readonly permanent: boolean;
  /** What `frond` exits with when a command fails with this code: 2 bad usage or configuration, 1 otherwise. */
  readonly exitCode: 1 | 2;
}

/**
 * Every failure frond reports has a stable code, and everything that depends on the code is here:
 * its HTTP status, whether a client may retry, whether a failed segment load is final, and the CLI's
 * exit code. The message is for people. A new code needs a row here, in docs/api.md's table and in
 * the SDK's `SERVER_ERROR_CODES` (tests check both).
 */
export const ERROR_CODES = {
  INVALID_ARGUMENT: { status: 400, retryable: false, permanent: false, exitCode: 2 },
  INVALID_TAG: { status: 400, retryable: false, permanent: false, exitCode: 2 },
  INVALID_COUNT: { status: 400, retryable: false, permanent: false, exitCode: 2 },
  INVALID_ID: { status: 400, retryable: false, permanent: false, exitCode: 2 },
  NOT_FOUND: { status: 404, retryable: false, permanent: false, exitCode: 1 },
  METHOD_NOT_ALLOWED: { status: 405, retryable: false, permanent: false, exitCode: 1 },
  MODE_DISABLED: { status: 404, retryable: false, permanent: false, exitCode: 1 },
  TAG_NOT_FOUND: { status: 404, retryable: false, permanent: true, exitCode: 1 },
  TAG_EXISTS: { status: 409, retryable: false, permanent: false, exitCode: 1 },
  /** A token is required (--token, --admin-token) and none or a wrong one was given. */
  UNAUTHORIZED: { status: 401, retryable: false, permanent: false, exitCode: 1 },
  /** Without --admin-token the admin API answers only on loopback. */
  FORBIDDEN: { status: 403, retryable: false, permanent: false, exitCode: 1 },
  PAYLOAD_TOO_LARGE: { status: 413, retryable: false, permanent: false, exitCode: 1 },
  /** This client sent more requests per second than --rate-limit allows. */
  RATE_LIMITED: { status: 429, retryable: true, permanent: false, exitCode: 1 },
  /** Both buffers of a tag are empty and no segment arrived in time (database slow or down). */
  SEGMENT_UNAVAILABLE: { status: 503, retryable: true, permanent: false, exitCode: 1 },
  /** The store could not be reached or answered with an error. */
  STORE_UNAVAILABLE: { status: 503, retryable: true, permanent: false, exitCode: 1 },
  /**
   * The store returned a range that starts below one this node already handed out (a row lowered,
   * or dropped and re-added): the range is not served. 503: the next load (after a fence, or once
   * the row is above) may succeed; the code reaches the caller as it is (`permanent`).
   */
  SEGMENT_REGRESSED: { status: 503, retryable: true, permanent: true, exitCode: 1 },
  /** The next range of a tag would pass 2^63 - 1 (Java's Long.MAX_VALUE); the row is left unchanged. */
  ID_RANGE_EXHAUSTED: { status: 500, retryable: false, permanent: true, exitCode: 1 },
  /** The clock is behind the last timestamp this node used; waiting did not help. */
  CLOCK_MOVED_BACKWARDS: { status: 503, retryable: true, permanent: false, exitCode: 1 },
  /** A time unit's sequence (4096 IDs of a ms in Leaf's layout) is used up and the clock did not move on. */
  SEQUENCE_EXHAUSTED: { status: 503, retryable: true, permanent: false, exitCode: 1 },
  /** The timestamp could not be recorded durably, so IDs past the recorded time are withheld. */
  TIMESTAMP_NOT_RECORDED: { status: 503, retryable: true, permanent: false, exitCode: 1 },
  /** The layout's time bits from the epoch are used up (Leaf's 41 bits of ms from its epoch: in 2080). */
  TIMESTAMP_OVERFLOW: { status: 500, retryable: false, permanent: false, exitCode: 1 },
  WORKER_ID_UNAVAILABLE: { status: 503, retryable: true, permanent: false, exitCode: 1 },
  SHUTTING_DOWN: { status: 503, retryable: true, permanent: false, exitCode: 1 },
  /** An opaque tag was asked of a node started without FROND_OPAQUE_SECRET(_FILE): another node may serve it. */
  OPAQUE_SECRET_MISSING: { status: 503, retryable: true, permanent: true, exitCode: 2 },
  /** This node's opaque-ID secret is not the one the tag was created with: all nodes must share one. */
  OPAQUE_SECRET_MISMATCH: { status: 503, retryable: true, permanent: true, exitCode: 2 },
  /** A tag's opaque domain is fixed when it is created: changing it (or making a used tag opaque) could repeat IDs. */
  OPAQUE_TAG_FIXED: { status: 409, retryable: false, permanent: false, exitCode: 1 },
  /** /v1/ranges grants consecutive IDs, which an opaque tag does not have; /v1/segment answers lists. */
  OPAQUE_NO_RANGES: { status: 409, retryable: false, permanent: false, exitCode: 1 },
  /** /v1/ranges grants consecutive IDs; a formatted tag's numbers are text (docs/formats.md): /v1/segment answers lists. */
  FORMAT_NO_RANGES: { status: 409, retryable: false, permanent: false, exitCode: 1 },
  /**
   * A formatted tag's format and zone are fixed when it is created (frond_tag_formats keeps them for
   * good): another format, or a plain or opaque tag, under its name could repeat a number it served.
   */
  FORMAT_TAG_FIXED: { status: 409, retryable: false, permanent: false, exitCode: 1 },
  /**
   * A tag's row was deleted and created again with another kind (plain, opaque) while this node
   * held it: the segment granted under the new kind is not served under the old one. Retried by
   * the node itself; a client sees it only if the tag changes again in between.
   */
  TAG_KIND_CHANGED: { status: 503, retryable: true, permanent: true, exitCode: 1 },
  INVALID_CONFIG: { status: 500, retryable: false, permanent: true, exitCode: 2 },
  INTERNAL: { status: 500, retryable: false, permanent: false, exitCode: 1 },
} as const satisfies Record<string, ErrorCodeSpec>;

export type FrondErrorCode = keyof typeof ERROR_CODES;

export class FrondError extends Error {
  override readonly name = 'FrondError';
  constructor(
    readonly code: FrondErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }

  get retryable(): boolean {
    return ERROR_CODES[this.code].retryable;
  }
}

export function isFrondError(error: unknown, code?: FrondErrorCode): error is FrondError {
  return error instanceof FrondError && (code === undefined || error.code === code);
}

/** Thrown when the clock is behind the last timestamp used; `offsetMs` says by how much. */
export class ClockMovedBackwardsError extends FrondError {
  constructor(readonly offsetMs: number) {
    super(
      'CLOCK_MOVED_BACKWARDS',
      `the clock moved back by ${offsetMs} ms; refusing to issue IDs until it catches up`,
    );
  }
}

/**
 * A time unit's sequence is used up (a layout in units above 1 ms): `waitMs` until the next unit
 * starts, which the caller sleeps rather than spins, since a unit may last up to a second.
 */
export class SequenceExhaustedError extends FrondError {
  constructor(
    readonly waitMs: number,
    message: string,
  ) {
    super('SEQUENCE_EXHAUSTED', message);
  }
}

/**
 * A failure that ends at a known moment: a formatted tag's period whose `{seq:N}` is used up
 * answers ID_RANGE_EXHAUSTED until the next period starts. HTTP answers it 503 with `Retry-After:
 * <retryAfterSeconds>` and gRPC UNAVAILABLE (`httpStatusOf`, `grpcStatusOf`), whatever the code's
 * own status: the same call succeeds once that time has passed.
 */
export class RetryLaterError extends FrondError {
  constructor(
    code: FrondErrorCode,
    message: string,
    /** Whole seconds, at least 1, until the call may succeed. */
    readonly retryAfterSeconds: number,
  ) {
    super(code, message);
  }

  override get retryable(): boolean {
    return true;
  }
}

/** The seconds a caller should wait before trying again: `RetryLaterError`'s, else undefined. */
export function retryAfterOf(error: FrondError): number | undefined {
  return error instanceof RetryLaterError ? error.retryAfterSeconds : undefined;
}

/** One line for a person: the message of a FrondError, or of anything else thrown. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
