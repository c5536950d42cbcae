import { FrondClientError } from './errors.js';

/** Twitter's epoch, which Leaf and frond use by default: 2010-11-04T01:42:54.657Z. */
export const LEAF_EPOCH = 1288834974657;

/** Leaf's layout, the servers' default: `--snowflake-layout 41+10+12`. */
export const LEAF_LAYOUT_BITS = '41+10+12';

const MAX_ID = (1n << 63n) - 1n;

/**
 * How the servers lay out their snowflake IDs, as their settings say it: `--snowflake-layout`
 * (`TIME+WORKER+SEQUENCE` bits, summing to 63), `--time-unit-ms` and `--epoch`. Each absent one is
 * the servers' default (Leaf's 41+10+12 in ms from Leaf's epoch). A server shows its own in
 * `/healthz` and `/v1/stats` (`snowflake.layout`).
 */
export interface SnowflakeLayoutOptions {
  /** `41+10+12` by default. */
  snowflakeLayout?: string;
  /** 1 by default. */
  timeUnitMs?: number;
  /** 1288834974657 (Leaf's) by default. */
  epoch?: number;
}

/** The parts of a snowflake ID. */
export interface SnowflakeParts {
  id: bigint;
  /** Milliseconds since 1970 (the epoch added back): the start of the ID's time unit. */
  timestamp: number;
  time: Date;
  /** 0 to 1023 in Leaf's layout; up to 2^worker bits − 1. */
  workerId: number;
  /** 0 to 4095 in Leaf's layout; up to 2^sequence bits − 1. */
  sequence: number;
}

/** A checked layout, its shifts and masks made once. */
export interface SnowflakeLayout {
  readonly timeBits: number;
  readonly workerBits: number;
  readonly sequenceBits: number;
  readonly timeUnitMs: number;
  readonly epoch: number;
  readonly workerShift: bigint;
  readonly timeShift: bigint;
  readonly workerMask: bigint;
  readonly sequenceMask: bigint;
}

/**
 * The layout, or INVALID_ARGUMENT: the bits must be whole and sum to 63, with 1 to 22 worker bits
 * and 1 to 22 sequence bits; the unit 1 to 1000 ms; the epoch ms since 1970 (the
 * servers refuse the same).
 */
export function snowflakeLayout(options: SnowflakeLayoutOptions = {}): SnowflakeLayout {
  const text = options.snowflakeLayout ?? LEAF_LAYOUT_BITS;
  const timeUnitMs = options.timeUnitMs ?? 1;
  const epoch = options.epoch ?? LEAF_EPOCH;
  const match =
    typeof text === 'string' ? /^\s*(\d{1,2})\s*\+\s*(\d{1,2})\s*\+\s*(\d{1,2})\s*$/.exec(text) : null;
  const [timeBits, workerBits, sequenceBits] = match ? match.slice(1).map(Number) : [];
  if (timeBits === undefined || workerBits === undefined || sequenceBits === undefined)
    throw invalid(
      `snowflakeLayout ${JSON.stringify(text)} is invalid: give TIME+WORKER+SEQUENCE bits, e.g. 41+10+12`,
    );
  const within = (bits: number) => bits >= 1 && bits <= 22;
  if (timeBits + workerBits + sequenceBits !== 63 || !within(workerBits) || !within(sequenceBits))
    throw invalid(
      `snowflakeLayout ${text} is invalid: the bits must sum to 63, with 1 to 22 worker bits and 1 to 22 sequence bits`,
    );
  if (!Number.isInteger(timeUnitMs) || timeUnitMs < 1 || timeUnitMs > 1000)
    throw invalid(`timeUnitMs ${String(timeUnitMs)} is out of range: use an integer from 1 to 1000`);
  if (!Number.isSafeInteger(epoch) || epoch < 0)
    throw invalid(
      `epoch ${String(epoch)} is out of range: use an integer from 0 to ${Number.MAX_SAFE_INTEGER}`,
    );
  return {
    timeBits,
    workerBits,
    sequenceBits,
    timeUnitMs,
    epoch,
    workerShift: BigInt(sequenceBits),
    timeShift: BigInt(sequenceBits + workerBits),
    workerMask: (1n << BigInt(workerBits)) - 1n,
    sequenceMask: (1n << BigInt(sequenceBits)) - 1n,
  };
}

const LEAF_LAYOUT = snowflakeLayout();

/**
 * Splits a snowflake ID into time, worker and sequence, locally (the same answer as the server's
 * `GET /v1/snowflake/decode/{id}` for the same layout). `layout` is the servers' layout (or only
 * their epoch, a number, with Leaf's bits); Leaf's 41+10+12 in ms from Leaf's epoch by default. A
 * number ID must be a safe integer: a larger one has already lost its low bits, so it is refused
 * rather than decoded wrongly.
 */
export function decodeSnowflake(
  id: bigint | string | number,
  layout: SnowflakeLayout | SnowflakeLayoutOptions | number = LEAF_LAYOUT,
): SnowflakeParts {
  const value = toBigInt(id);
  const checked =
    typeof layout === 'number'
      ? snowflakeLayout({ epoch: layout })
      : 'timeShift' in layout
        ? layout
        : snowflakeLayout(layout);
  const timestamp = Number(value >> checked.timeShift) * checked.timeUnitMs + checked.epoch;
  return {
    id: value,
    timestamp,
    time: new Date(timestamp),
    workerId: Number((value >> checked.workerShift) & checked.workerMask),
    sequence: Number(value & checked.sequenceMask),
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

function invalid(message: string): FrondClientError {
  return new FrondClientError('INVALID_ARGUMENT', message);
}
