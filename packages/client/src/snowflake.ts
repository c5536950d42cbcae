import { FrondClientError } from './errors.js';

/** Twitter's epoch, which Leaf and frond use by default: 2010-11-04T01:42:54.657Z. */
export const LEAF_EPOCH = 1288834974657;

// Layout: 1 sign bit (0) | 41 bits of ms since the epoch | 10 bits of worker ID | 12 bits of sequence.
const SEQUENCE_BITS = 12n;
const WORKER_BITS = 10n;
const MAX_ID = (1n << 63n) - 1n;

/** The parts of a snowflake ID. */
export interface SnowflakeParts {
  id: bigint;
  /** Milliseconds since 1970 (the epoch added back). */
  timestamp: number;
  time: Date;
  /** 0 to 1023. */
  workerId: number;
  /** 0 to 4095. */
  sequence: number;
}

/**
 * Splits a snowflake ID into time, worker and sequence, locally (the same answer as the server's
 * `GET /v1/snowflake/decode/{id}` for the same epoch). A number must be a safe integer: a larger
 * one has already lost its low bits, so it is refused rather than decoded wrongly.
 */
export function decodeSnowflake(id: bigint | string | number, epoch = LEAF_EPOCH): SnowflakeParts {
  const value = toBigInt(id);
  const timestamp = Number(value >> (SEQUENCE_BITS + WORKER_BITS)) + epoch;
  return {
    id: value,
    timestamp,
    time: new Date(timestamp),
    workerId: Number((value >> SEQUENCE_BITS) & ((1n << WORKER_BITS) - 1n)),
    sequence: Number(value & ((1n << SEQUENCE_BITS) - 1n)),
  };
}

function toBigInt(id: bigint | string | number): bigint {
  let value: bigint | undefined;
  if (typeof id === 'bigint') value = id;
  else if (typeof id === 'number') value = Number.isSafeInteger(id) ? BigInt(id) : undefined;
  else if (/^[0-9]{1,19}$/.test(id)) value = BigInt(id);
  if (value === undefined || value < 0n || value > MAX_ID) {
    throw new FrondClientError(
      'INVALID_ID',
      `invalid snowflake ID ${String(id).slice(0, 40)}: expected an integer from 0 to 2^63 - 1 (a number only up to 2^53 - 1)`,
    );
  }
  return value;
}
