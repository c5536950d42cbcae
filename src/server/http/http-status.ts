import { ERROR_CODES, type FrondError, type FrondErrorCode, RetryLaterError } from '../../core/errors.js';

/** The status each error code is answered with, read from the registry in `src/core/errors.ts`. */
export const HTTP_STATUS: Readonly<Record<FrondErrorCode, number>> = Object.fromEntries(
  Object.entries(ERROR_CODES).map(([code, spec]) => [code, spec.status]),
) as Record<FrondErrorCode, number>;

/**
 * The status of one failure: its code's, except that a failure that ends at a known moment
 * (`RetryLaterError`: a formatted tag's period used up) is 503, answered with `Retry-After`.
 */
export function httpStatusOf(error: FrondError): number {
  return error instanceof RetryLaterError ? 503 : HTTP_STATUS[error.code];
}
