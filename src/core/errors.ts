/**
 * Every failure frond reports has a stable code. The code decides the HTTP status (in one place,
 * `src/server/http-status.ts`) and whether a client may retry; the message is for people.
 */
export const ERROR_CODES = {
  INVALID_ARGUMENT: { retryable: false },
  INVALID_TAG: { retryable: false },
  INVALID_COUNT: { retryable: false },
  INVALID_ID: { retryable: false },
  NOT_FOUND: { retryable: false },
  METHOD_NOT_ALLOWED: { retryable: false },
  MODE_DISABLED: { retryable: false },
  TAG_NOT_FOUND: { retryable: false },
  TAG_EXISTS: { retryable: false },
  /** A token is required (--token, --admin-token) and none or a wrong one was given. */
  UNAUTHORIZED: { retryable: false },
  /** Without --admin-token the admin API answers only on loopback. */
  FORBIDDEN: { retryable: false },
  PAYLOAD_TOO_LARGE: { retryable: false },
  /** This client sent more requests per second than --rate-limit allows. */
  RATE_LIMITED: { retryable: true },
  /** Both buffers of a tag are empty and no segment arrived in time (database slow or down). */
  SEGMENT_UNAVAILABLE: { retryable: true },
  /** The store could not be reached or answered with an error. */
  STORE_UNAVAILABLE: { retryable: true },
  /** The store returned a range that starts below one this node already handed out. */
  SEGMENT_REGRESSED: { retryable: false },
  /** max_id passed 2^53 - 1, the largest integer frond serves exactly in segment mode. */
  ID_RANGE_EXHAUSTED: { retryable: false },
  /** The clock is behind the last timestamp this node used; waiting did not help. */
  CLOCK_MOVED_BACKWARDS: { retryable: true },
  /** 4096 IDs were used in one millisecond and the clock did not move on. */
  SEQUENCE_EXHAUSTED: { retryable: true },
  /** The timestamp could not be recorded durably, so IDs past the recorded time are withheld. */
  TIMESTAMP_NOT_RECORDED: { retryable: true },
  /** 41 bits of milliseconds from the epoch are used up (Leaf's epoch: in 2080). */
  TIMESTAMP_OVERFLOW: { retryable: false },
  WORKER_ID_UNAVAILABLE: { retryable: true },
  SHUTTING_DOWN: { retryable: true },
  INVALID_CONFIG: { retryable: false },
  INTERNAL: { retryable: false },
} as const satisfies Record<string, { retryable: boolean }>;

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

/** One line for a person: the message of a FrondError, or of anything else thrown. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
