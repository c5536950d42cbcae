import { FrondError } from './errors.js';

/** Twitter's epoch, which Leaf uses: 2010-11-04T01:42:54.657Z. */
export const LEAF_EPOCH = 1288834974657;
/** Leaf's layout, frond's default: these constants describe it (and only it); see `LEAF_LAYOUT`. */
export const TIMESTAMP_BITS = 41;
export const WORKER_ID_BITS = 10;
export const SEQUENCE_BITS = 12;
export const MAX_WORKER_ID = (1 << WORKER_ID_BITS) - 1; // 1023
export const MAX_SEQUENCE = (1 << SEQUENCE_BITS) - 1; // 4095
/** 41 bits of milliseconds last 2^41 ms, about 69.7 years: from Leaf's epoch, until 2080-07-10. */
export const TIMESTAMP_SPAN_MS = 2 ** TIMESTAMP_BITS;

/** The largest snowflake ID: the sign bit stays 0, so IDs fit a signed 64-bit column. */
export const MAX_SNOWFLAKE_ID = (1n << 63n) - 1n;

/**
 * Worker bits stop here: 4,194,304 worker IDs (uid-generator's 22), which coordinators can still
 * list and scan at a claim. Sonyflake's 16 and CosId's 10 are well inside.
 */
export const MAX_WORKER_BITS = 22;
/**
 * Sequence bits stop there too: 4,194,304 IDs a time unit (a sequence is a JavaScript number in the
 * generator, exact far beyond this).
 */
export const MAX_SEQUENCE_BITS = 22;
/** The largest worker ID any layout has: what `--worker-id` accepts before the layout is known. */
export const MAX_ANY_WORKER_ID = 2 ** MAX_WORKER_BITS - 1;
/**
 * The coarsest time unit: 1 s, as uid-generator. A node waits up to one unit for the next one once a
 * unit's sequence is used up, and after a restart, so coarser units would make those waits minutes.
 */
export const MAX_TIME_UNIT_MS = 1_000;
/** The last millisecond a JavaScript Date holds (year 275760): a layout must end by then. */
const MAX_DATE_MS = 8.64e15;

const DAY_MS = 86_400_000;
/** A layout must have at least this long left at a node's start. */
export const MIN_TIME_LEFT_MS = 365 * DAY_MS;
/** Under this much time left, `/readyz`, `/v1/stats`, the dashboard and the start's log warn. */
export const TIME_LEFT_WARNING_MS = 3 * 365 * DAY_MS;

/** What a layout is made of: bits of time, worker ID and sequence (summing to 63), the unit, the epoch. */
export interface SnowflakeLayoutSpec {
  timeBits: number;
  workerBits: number;
  sequenceBits: number;
  /** Milliseconds per unit of the time field: 1 (Leaf), 10 (Sonyflake), 1000 (uid-generator). */
  timeUnitMs: number;
  /** ms since 1970 at which the time field is 0. */
  epoch: number;
}

/** What messages call the layout's parts: the CLI names its flags (`--snowflake-layout`). */
export interface LayoutNames {
  bits: string;
  unit: string;
  epoch: string;
}

const PLAIN_NAMES: LayoutNames = { bits: 'layout', unit: 'time unit', epoch: 'epoch' };

export interface SnowflakeParts {
  /** Milliseconds since 1970 (the epoch added back): the start of the ID's time unit. */
  timestamp: number;
  workerId: number;
  sequence: number;
}

/**
 * A snowflake layout, a value: 1 sign bit (0) | time | worker ID | sequence, the time counted in
 * `timeUnitMs` since `epoch`. Pure; the shifts and masks are BigInts made once, so the generator's
 * path does no conversion of its own. `SnowflakeLayout.of` refuses a layout that cannot work.
 */
export class SnowflakeLayout implements SnowflakeLayoutSpec {
  readonly timeBits: number;
  readonly workerBits: number;
  readonly sequenceBits: number;
  readonly timeUnitMs: number;
  readonly epoch: number;
  /** 2^workerBits − 1: the largest worker ID. */
  readonly maxWorkerId: number;
  /** 2^workerBits: how many nodes can hold a worker ID at once. */
  readonly workerIdCount: number;
  /** 2^sequenceBits − 1: the last sequence of one time unit. */
  readonly maxSequence: number;
  /** 2^timeBits: how many time units the time field holds. */
  readonly unitSpan: number;
  /** ms since 1970 of the first millisecond no ID can carry: epoch + 2^timeBits × unit. */
  readonly endsAt: number;
  /** `workerId << workerShift`, `units << timeShift`. */
  readonly workerShift: bigint;
  readonly timeShift: bigint;
  readonly workerMask: bigint;
  readonly sequenceMask: bigint;

  private constructor(spec: SnowflakeLayoutSpec) {
    this.timeBits = spec.timeBits;
    this.workerBits = spec.workerBits;
    this.sequenceBits = spec.sequenceBits;
    this.timeUnitMs = spec.timeUnitMs;
    this.epoch = spec.epoch;
    this.workerIdCount = 2 ** spec.workerBits;
    this.maxWorkerId = this.workerIdCount - 1;
    this.maxSequence = 2 ** spec.sequenceBits - 1;
    this.unitSpan = 2 ** spec.timeBits;
    this.endsAt = spec.epoch + this.unitSpan * spec.timeUnitMs;
    this.workerShift = BigInt(spec.sequenceBits);
    this.timeShift = BigInt(spec.sequenceBits + spec.workerBits);
    this.workerMask = (1n << BigInt(spec.workerBits)) - 1n;
    this.sequenceMask = (1n << BigInt(spec.sequenceBits)) - 1n;
  }

  /**
   * The layout, or INVALID_CONFIG saying in one line what cannot work: bits that are not whole,
   * do not sum to 63, sequence or worker bits outside 1–22, a unit outside 1–1000 ms, or a
   * time field that runs past the last date JavaScript holds. Whether it lasts long enough from
   * now is `assertLasts`'s, since an old layout still decodes.
   */
  static of(spec: SnowflakeLayoutSpec, names: LayoutNames = PLAIN_NAMES): SnowflakeLayout {
    const { timeBits, workerBits, sequenceBits, timeUnitMs, epoch } = spec;
    const what = `${names.bits} ${timeBits}+${workerBits}+${sequenceBits}`;
    if (![timeBits, workerBits, sequenceBits].every(Number.isInteger))
      throw invalid(`${what}: bits are whole numbers (time+worker+sequence, e.g. 41+10+12)`);
    if (timeBits + workerBits + sequenceBits !== 63)
      throw invalid(
        `${what} has ${timeBits + workerBits + sequenceBits} bits: time, worker and sequence bits must sum to 63 (the sign bit stays 0), e.g. 41+10+12`,
      );
    if (sequenceBits < 1)
      throw invalid(`${what} has no sequence bit: give it at least 1 (Leaf's 12: 4096 IDs a time unit)`);
    if (sequenceBits > MAX_SEQUENCE_BITS)
      throw invalid(
        `${what}: sequence bits must be 1 to ${MAX_SEQUENCE_BITS} (up to ${(2 ** MAX_SEQUENCE_BITS).toLocaleString('en-US')} IDs a time unit)`,
      );
    if (workerBits < 1 || workerBits > MAX_WORKER_BITS)
      throw invalid(
        `${what}: worker bits must be 1 to ${MAX_WORKER_BITS} (2 to ${(MAX_ANY_WORKER_ID + 1).toLocaleString('en-US')} worker IDs)`,
      );
    if (!Number.isInteger(timeUnitMs) || timeUnitMs < 1 || timeUnitMs > MAX_TIME_UNIT_MS)
      throw invalid(`${names.unit} ${timeUnitMs} ms: use a whole number of ms from 1 to ${MAX_TIME_UNIT_MS}`);
    if (!Number.isSafeInteger(epoch) || epoch < 0)
      throw invalid(`${names.epoch} ${epoch}: use ms since 1970, a whole number from 0`);
    const layout = new SnowflakeLayout(spec);
    if (layout.endsAt > MAX_DATE_MS) {
      const fit = Math.floor(Math.log2((MAX_DATE_MS - epoch) / timeUnitMs));
      throw invalid(
        `${what} in ${timeUnitMs} ms units runs past the year 275760, the last date JavaScript holds: use at most ${fit} time bits with this unit`,
      );
    }
    return layout;
  }

  /** `41+10+12`. */
  get bits(): string {
    return `${this.timeBits}+${this.workerBits}+${this.sequenceBits}`;
  }

  /** Whether this is Leaf's 41+10+12 in ms (from any epoch): Leaf's own tools decode it. */
  get isLeafBits(): boolean {
    return this.timeBits === TIMESTAMP_BITS && this.workerBits === WORKER_ID_BITS && this.timeUnitMs === 1;
  }

  /** `41+10+12 bits, 1 ms units, epoch 1288834974657 (2010-11-04T01:42:54.657Z), until 2080-07-10T17:30:30.209Z`. */
  describe(): string {
    return `${this.bits} bits, ${this.timeUnitMs} ms units, epoch ${this.epoch} (${new Date(this.epoch).toISOString()}), until ${new Date(this.endsAt).toISOString()}`;
  }

  /** The time unit that holds `ms` (ms since 1970), counted from the epoch; negative before it. */
  unitOf(ms: number): number {
    return unitOfElapsed(ms - this.epoch, this.timeUnitMs);
  }

  /** The first millisecond of time unit `unit`. */
  unitStart(unit: number): number {
    return this.epoch + unit * this.timeUnitMs;
  }

  /** The last millisecond of the time unit that holds `ms`: an ID of that unit may carry any ms of it. */
  lastMsOfUnit(ms: number): number {
    return this.unitStart(this.unitOf(ms) + 1) - 1;
  }

  /** Throws INVALID_CONFIG unless `workerId` fits the worker bits. */
  assertWorkerId(workerId: number): number {
    if (!Number.isInteger(workerId) || workerId < 0 || workerId > this.maxWorkerId) {
      throw invalid(
        `worker ID ${workerId} is out of range: use an integer from 0 to ${this.maxWorkerId}${this.isLeafBits ? '' : ` (${this.workerBits} worker bits)`}`,
      );
    }
    return workerId;
  }

  compose(parts: SnowflakeParts): bigint {
    const unit = this.unitOf(parts.timestamp);
    if (!Number.isInteger(parts.timestamp) || unit < 0 || unit >= this.unitSpan) {
      throw new FrondError(
        'TIMESTAMP_OVERFLOW',
        `timestamp ${parts.timestamp} is outside the ${this.timeBits}-bit range of the epoch`,
      );
    }
    return (
      (BigInt(unit) << this.timeShift) |
      (BigInt(parts.workerId) << this.workerShift) |
      (BigInt(parts.sequence) & this.sequenceMask)
    );
  }

  /** The parts of a non-negative ID (`parseSnowflakeId`); the timestamp is its unit's first ms. */
  decompose(id: bigint): SnowflakeParts {
    return {
      timestamp: this.unitStart(Number(id >> this.timeShift)),
      workerId: Number((id >> this.workerShift) & this.workerMask),
      sequence: Number(id & this.sequenceMask),
    };
  }

  /** ms until the time bits run out (negative once they have). */
  timeLeftMs(now: number): number {
    return this.endsAt - now;
  }

  /**
   * Refuses, in one line, a layout a node cannot start with at `now`: a clock before the epoch, or
   * under a year left in the time bits (`MIN_TIME_LEFT_MS`).
   */
  assertLasts(now: number, names: LayoutNames = PLAIN_NAMES): void {
    if (now < this.epoch)
      throw invalid(
        `${names.epoch} ${this.epoch} (${new Date(this.epoch).toISOString()}) is after the clock`,
      );
    const left = this.timeLeftMs(now);
    if (left < MIN_TIME_LEFT_MS)
      throw invalid(
        `${names.bits} ${this.bits} in ${this.timeUnitMs} ms units from ${names.epoch} ${this.epoch} ${left <= 0 ? 'ran out' : 'runs out'} on ${new Date(this.endsAt).toISOString()}${left > 0 ? `, in ${Math.floor(left / DAY_MS)} days` : ''}: a layout must last at least 365 days from now; use more time bits or a larger ${names.unit} (docs/snowflake-layouts.md says how to keep new IDs above the old)`,
      );
  }

  /** A warning while under `TIME_LEFT_WARNING_MS` is left, else undefined. */
  timeLeftWarning(now: number): string | undefined {
    const left = this.timeLeftMs(now);
    if (left >= TIME_LEFT_WARNING_MS) return undefined;
    const when = new Date(this.endsAt).toISOString();
    if (left <= 0) return `the snowflake time bits (${this.bits}) ran out on ${when}`;
    return `the snowflake time bits (${this.bits}, ${this.timeUnitMs} ms units) run out on ${when}, in ${Math.floor(left / DAY_MS)} days: plan a new layout (docs/snowflake-layouts.md); nodes refuse to start with under 365 days left`;
  }

  equals(other: SnowflakeLayoutSpec): boolean {
    return (
      this.timeBits === other.timeBits &&
      this.workerBits === other.workerBits &&
      this.sequenceBits === other.sequenceBits &&
      this.timeUnitMs === other.timeUnitMs &&
      this.epoch === other.epoch
    );
  }

  /** The same bits and unit from another epoch. */
  withEpoch(epoch: number): SnowflakeLayout {
    return SnowflakeLayout.of({ ...this.spec(), epoch });
  }

  spec(): SnowflakeLayoutSpec {
    const { timeBits, workerBits, sequenceBits, timeUnitMs, epoch } = this;
    return { timeBits, workerBits, sequenceBits, timeUnitMs, epoch };
  }
}

/**
 * `floor(elapsed / unitMs)` exactly: a float quotient can round up to the next whole number when it
 * is large and just below it, so the product is checked (exact below 2^53, which every time a layout
 * holds is).
 */
export function unitOfElapsed(elapsed: number, unitMs: number): number {
  const unit = Math.floor(elapsed / unitMs);
  return unit * unitMs > elapsed ? unit - 1 : unit;
}

/** Leaf's layout, the default: 41 bits of ms since Leaf's epoch, 10 of worker ID, 12 of sequence. */
export const LEAF_LAYOUT = SnowflakeLayout.of({
  timeBits: TIMESTAMP_BITS,
  workerBits: WORKER_ID_BITS,
  sequenceBits: SEQUENCE_BITS,
  timeUnitMs: 1,
  epoch: LEAF_EPOCH,
});

/** The bits as `--snowflake-layout` gives them: `TIME+WORKER+SEQUENCE`, e.g. `39+16+8`. */
export function parseLayoutBits(
  text: string,
  names: LayoutNames = PLAIN_NAMES,
): Pick<SnowflakeLayoutSpec, 'timeBits' | 'workerBits' | 'sequenceBits'> {
  const match = /^\s*([0-9]{1,2})\s*\+\s*([0-9]{1,2})\s*\+\s*([0-9]{1,2})\s*$/.exec(text);
  if (match === null)
    throw invalid(
      `${names.bits} ${JSON.stringify(text.slice(0, 40))} is invalid: give TIME+WORKER+SEQUENCE bits summing to 63, e.g. 41+10+12`,
    );
  return { timeBits: Number(match[1]), workerBits: Number(match[2]), sequenceBits: Number(match[3]) };
}

/** A layout from `--snowflake-layout`, `--time-unit-ms` and `--epoch`. */
export function layoutOf(
  bits: string,
  timeUnitMs: number,
  epoch: number,
  names: LayoutNames = PLAIN_NAMES,
): SnowflakeLayout {
  return SnowflakeLayout.of({ ...parseLayoutBits(bits, names), timeUnitMs, epoch }, names);
}

/** A layout, or Leaf's bits from `epoch` when given a number (the calls written before layouts). */
function layoutFrom(layout: SnowflakeLayout | number): SnowflakeLayout {
  if (typeof layout !== 'number') return layout;
  return layout === LEAF_EPOCH ? LEAF_LAYOUT : LEAF_LAYOUT.withEpoch(layout);
}

/** The largest worker ID of `layout` (1023 for Leaf's). */
export function maxWorkerIdOf(layout: SnowflakeLayout = LEAF_LAYOUT): number {
  return layout.maxWorkerId;
}

export function assertWorkerId(workerId: number, layout: SnowflakeLayout = LEAF_LAYOUT): number {
  return layout.assertWorkerId(workerId);
}

/** `layout.compose`; a number is an epoch with Leaf's bits. */
export function composeSnowflake(
  parts: SnowflakeParts,
  layout: SnowflakeLayout | number = LEAF_LAYOUT,
): bigint {
  return layoutFrom(layout).compose(parts);
}

/** `layout.decompose`; a number is an epoch with Leaf's bits. */
export function decomposeSnowflake(
  id: bigint,
  layout: SnowflakeLayout | number = LEAF_LAYOUT,
): SnowflakeParts {
  return layoutFrom(layout).decompose(id);
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

function invalid(message: string): FrondError {
  return new FrondError('INVALID_CONFIG', message);
}
