import { FrondError } from './errors.js';

/** Twitter's epoch, which Leaf uses: 2010-11-04T01:42:54.657Z. */
export const LEAF_EPOCH = 1288834974657;
export const TIMESTAMP_BITS = 41;
export const WORKER_ID_BITS = 10;
export const SEQUENCE_BITS = 12;
export const MAX_WORKER_ID = (1 << WORKER_ID_BITS) - 1; // 1023
export const MAX_SEQUENCE = (1 << SEQUENCE_BITS) - 1; // 4095
/** 41 bits of milliseconds last 2^41 ms, about 69.7 years: from Leaf's epoch, until 2080-07-10. */
export const TIMESTAMP_SPAN_MS = 2 ** TIMESTAMP_BITS;

const WORKER_SHIFT = BigInt(SEQUENCE_BITS);
const TIMESTAMP_SHIFT = BigInt(SEQUENCE_BITS + WORKER_ID_BITS);
/** The largest snowflake ID: the sign bit stays 0, so IDs fit a signed 64-bit column. */
export const MAX_SNOWFLAKE_ID = (1n << 63n) - 1n;

export interface SnowflakeParts {
  /** Milliseconds since 1970 (the epoch added back). */
  timestamp: number;
  workerId: number;
  sequence: number;
}

export function assertWorkerId(workerId: number): number {
  if (!Number.isInteger(workerId) || workerId < 0 || workerId > MAX_WORKER_ID) {
    throw new FrondError(
      'INVALID_CONFIG',
      `worker ID ${workerId} is out of range: use an integer from 0 to 1023`,
    );
  }
  return workerId;
}

/** Layout: 1 sign bit (0) | 41 bits of ms since the epoch | 10 bits of worker ID | 12 bits of sequence. */
export function composeSnowflake(parts: SnowflakeParts, epoch = LEAF_EPOCH): bigint {
  const elapsed = parts.timestamp - epoch;
  if (!Number.isInteger(elapsed) || elapsed < 0 || elapsed >= TIMESTAMP_SPAN_MS) {
    throw new FrondError(
      'TIMESTAMP_OVERFLOW',
      `timestamp ${parts.timestamp} is outside the 41-bit range of the epoch`,
    );
  }
  return (
    (BigInt(elapsed) << TIMESTAMP_SHIFT) |
    (BigInt(parts.workerId) << WORKER_SHIFT) |
    BigInt(parts.sequence & MAX_SEQUENCE)
  );
}

export function decomposeSnowflake(id: bigint, epoch = LEAF_EPOCH): SnowflakeParts {
  return {
    timestamp: Number(id >> TIMESTAMP_SHIFT) + epoch,
    workerId: Number((id >> WORKER_SHIFT) & BigInt(MAX_WORKER_ID)),
    sequence: Number(id & BigInt(MAX_SEQUENCE)),
  };
}

/** Parses a decimal snowflake ID; anything else is INVALID_ID. */
export function parseSnowflakeId(text: string): bigint {
  if (!/^[0-9]{1,19}$/.test(text)) {
    throw new FrondError(
      'INVALID_ID',
      `invalid snowflake ID ${JSON.stringify(text.slice(0, 40))}: expected 1 to 19 decimal digits`,
    );
  }
  const id = BigInt(text);
  if (id > MAX_SNOWFLAKE_ID) {
    throw new FrondError('INVALID_ID', `invalid snowflake ID ${text}: above 2^63 - 1`);
  }
  return id;
}
