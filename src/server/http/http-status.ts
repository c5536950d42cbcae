import { ERROR_CODES, type FrondErrorCode } from '../../core/errors.js';

/** The status each error code is answered with, read from the registry in `src/core/errors.ts`. */
export const HTTP_STATUS: Readonly<Record<FrondErrorCode, number>> = Object.fromEntries(
  Object.entries(ERROR_CODES).map(([code, spec]) => [code, spec.status]),
) as Record<FrondErrorCode, number>;
