import { FrondError } from './errors.js';

/** Leaf's biz_tag is varchar(128): up to 128 characters, any of them. */
export const MAX_TAG_LENGTH = 128;

// C0 controls, DEL and C1 controls: no tag has them in a URL, a log line or a page unmangled.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// A high surrogate not followed by a low one, or a low one not preceded by a high one: not text.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Why `tag` cannot be a tag, or undefined when it can. Every tag Leaf's table can hold is served:
 * UTF-8, 1 to 128 characters (code points, as MySQL and PostgreSQL count them), any of them but
 * control characters; `.` and `..` alone are refused too, since a URL path cannot carry them (a
 * client's URL parser resolves them away, as Leaf's Tomcat did).
 */
export function tagProblem(tag: string): string | undefined {
  if (tag === '') return 'a tag is 1 to 128 characters; this one is empty';
  if (tag.length > MAX_TAG_LENGTH) {
    // A UTF-16 length over 128 may still be 128 code points or fewer (characters outside the BMP).
    let count = 0;
    for (const _ of tag) if (++count > MAX_TAG_LENGTH) break;
    if (count > MAX_TAG_LENGTH) return 'a tag is 1 to 128 characters; this one is longer';
  }
  if (LONE_SURROGATE.test(tag)) return 'a tag is text: this one has a lone UTF-16 surrogate';
  if (CONTROL.test(tag)) return 'a tag has no control characters (U+0000 to U+001F, U+007F to U+009F)';
  if (tag === '.' || tag === '..')
    return `a tag cannot be ${JSON.stringify(tag)} alone: no URL path carries it`;
  return undefined;
}

export function invalidTag(tag: string, problem: string): FrondError {
  const shown = JSON.stringify(tag.length > 140 ? `${tag.slice(0, 140)}…` : tag);
  return new FrondError('INVALID_TAG', `invalid tag ${shown}: ${problem}`);
}

export function assertValidTag(tag: string): string {
  const problem = tagProblem(tag);
  if (problem !== undefined) throw invalidTag(tag, problem);
  return tag;
}

/**
 * The tag in a URL path, as every route reads it: percent-decoded as UTF-8 (`%E8%AE%A2%E5%8D%95` is
 * `订单`, `order%20tag` is `order tag`; `+` stays `+`, as in any path). Bad percent-encoding or bytes
 * that are not UTF-8 are INVALID_TAG. The tag itself is checked where it is used (`assertValidTag`).
 */
export function decodeTagPath(raw: string): string {
  if (!raw.includes('%')) return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new FrondError(
      'INVALID_TAG',
      `invalid tag ${JSON.stringify(raw.slice(0, 140))} in the path: bad percent-encoding or not UTF-8`,
    );
  }
}

/** Leaf's step column is int(11); frond keeps steps to positive 32-bit integers. */
export const MAX_TABLE_STEP = 2_147_483_647;

export function assertStep(step: number): number {
  if (!Number.isSafeInteger(step) || step < 1 || step > MAX_TABLE_STEP) {
    throw new FrondError(
      'INVALID_ARGUMENT',
      `invalid step ${step}: use an integer from 1 to ${MAX_TABLE_STEP}`,
    );
  }
  return step;
}

const LONG_MIN = -(2n ** 63n);
const LONG_MAX = 2n ** 63n - 1n;

/**
 * The first ID of a new tag, stored as its max_id (as Leaf does). Refused at creation what could
 * never be served: the first range `[start, start + step)` must end at or below 2^63 - 1, Java's
 * Long.MAX_VALUE, and start at or above -2^63.
 */
export function assertStart(start: bigint, step: number): bigint {
  const highest = LONG_MAX - BigInt(step);
  if (start < LONG_MIN || start > highest) {
    throw new FrondError(
      'INVALID_ARGUMENT',
      `invalid start ${start}: with step ${step}, use an integer from ${LONG_MIN} to ${highest} (the first range must end at or below 2^63 - 1)`,
    );
  }
  return start;
}

/** A decimal integer as text (`-5`, `1000`, `9223372036854775000`), or undefined. */
export function parseDecimal(text: string): bigint | undefined {
  return /^-?[0-9]{1,19}$/.test(text) ? BigInt(text) : undefined;
}
