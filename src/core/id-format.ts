// Formatted tags (order numbers such as `ORD-20261201-000123`): the format language, the period a
// moment falls in, and the counter each period is numbered from. Pure: no I/O, time is passed in.
// THIS FILE IS A SKELETON ON BRANCH formats-base: its types and names are the contract between the
// store, the core and the server; the bodies marked "skeleton" are written on branch formats-core.
import { FrondError } from './errors.js';

/** A formatted tag's setting as stored (frond_tag_formats): the format text and an IANA zone. */
export interface FormatSetting {
  /** As the operator wrote it, e.g. `ORD-{yy}{MM}{dd}-{seq:8}`. */
  format: string;
  /** An IANA name (`Europe/Berlin`), `UTC` by default. */
  timeZone: string;
}

/** The finest date token of a format: its sequence starts again at 1 when this unit changes. */
export type PeriodUnit = 'none' | 'year' | 'month' | 'day' | 'hour';

/** A format checked and compiled (`parseFormat`). */
export interface IdFormat {
  readonly setting: FormatSetting;
  readonly unit: PeriodUnit;
  /** Every character of every number it can produce is a digit (literals included). */
  readonly numeric: boolean;
  /** N of `{seq:N}`, or null for `{seq}` (unpadded). */
  readonly seqWidth: number | null;
  /** The largest sequence a period can give: 10^N - 1 for `{seq:N}`, 2^63 - 1 for `{seq}`. */
  readonly maxSeq: bigint;
}

/** One period of a format in its zone: the counter's key and the moments it starts and ends. */
export interface Period {
  /** `2026` (year), `202612` (month), `20261201` (day), `2026120113` (hour), `all` (none). */
  readonly key: string;
  /** Inclusive start and exclusive end, ms since the Unix epoch (end: +Infinity for `none`). */
  readonly startMs: number;
  readonly endMs: number;
}

/** Between a tag and a period key in a counter's biz_tag; no tag has a control character (tag.ts). */
export const COUNTER_SEPARATOR = '\u001f';
/** The longest period key (`2026120113`) and the separator fit in leaf_alloc's varchar(128). */
export const MAX_FORMATTED_TAG_LENGTH = 128 - 1 - 10;

/** The biz_tag of `tag`'s counter for the period `key`. */
export function counterName(tag: string, key: string): string {
  return `${tag}${COUNTER_SEPARATOR}${key}`;
}

/** The tag and period key of a counter's biz_tag, or undefined for any other name. */
export function parseCounterName(name: string): { tag: string; key: string } | undefined {
  const at = name.lastIndexOf(COUNTER_SEPARATOR);
  if (at <= 0) return undefined;
  const key = name.slice(at + 1);
  if (key !== 'all' && !/^[0-9]{4}(?:[0-9]{2}){0,3}$/.test(key)) return undefined;
  return { tag: name.slice(0, at), key };
}

/** Checks and compiles a format; INVALID_ARGUMENT with one line naming the problem. (skeleton) */
export function parseFormat(setting: FormatSetting): IdFormat {
  throw new FrondError('INVALID_ARGUMENT', `formats are not built yet: ${setting.format}`);
}

/**
 * The period of `format` that the moment `nowMs` falls in, in the format's zone. Cached by the
 * caller until `endMs`: computing one costs microseconds (Intl), a request must not pay it. (skeleton)
 */
export function periodAt(format: IdFormat, nowMs: number): Period {
  throw new FrondError('INVALID_ARGUMENT', `formats are not built yet: ${format.setting.format} ${nowMs}`);
}

/** The number `seq` of `period` written in `format` (seq from 1 to maxSeq). (skeleton) */
export function renderId(format: IdFormat, period: Period, seq: bigint | number): string {
  throw new FrondError(
    'INVALID_ARGUMENT',
    `formats are not built yet: ${format.setting.format} ${period.key} ${seq}`,
  );
}
