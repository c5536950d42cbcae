import { FrondError } from '../../core/errors.js';
import {
  type FormatSetting,
  MAX_FORMATTED_TAG_LENGTH,
  parseCounterName,
  parseFormat,
  validTimeZone,
} from '../../core/id-format.js';
import { assertValidTag } from '../../core/tag.js';
import { type TagCatalogue, tagNotFound } from '../../core/tag-catalogue.js';

/** The zone of a formatted tag created without one. */
export const DEFAULT_TIME_ZONE = 'UTC';

/**
 * The setting a new formatted tag is stored with, checked as every way of creating one checks it
 * (`POST /v1/tags`, `frond tag add --format`, `--format-tag`): the zone an IANA name, stored in its
 * canonical spelling; the format one `parseFormat` takes (its one line otherwise); the tag short
 * enough for its counters' names (`tag` U+001F `2026120113` in leaf_alloc's varchar(128)); and no
 * opaque domain beside it. INVALID_ARGUMENT with one line for each.
 */
export function newFormatSetting(
  tag: string,
  format: string,
  timeZone: string | undefined,
  opaque: unknown,
): FormatSetting {
  assertValidTag(tag);
  if (opaque !== undefined && opaque !== null)
    throw new FrondError(
      'INVALID_ARGUMENT',
      `tag ${tag}: a format and opaque do not go together: a formatted tag's numbers are meant to be read (its period and its count in it), an opaque one's to hide both; pick one`,
    );
  if ([...tag].length > MAX_FORMATTED_TAG_LENGTH)
    throw new FrondError(
      'INVALID_ARGUMENT',
      `tag ${tag.slice(0, 40)}…: a formatted tag's name is at most ${MAX_FORMATTED_TAG_LENGTH} characters (its counters are named tag, a separator and a period of up to 10 digits, in leaf_alloc's 128)`,
    );
  const setting = { format, timeZone: validTimeZone(timeZone ?? DEFAULT_TIME_ZONE) };
  parseFormat(setting);
  return setting;
}

/** How many counter rows (`counterName`) each formatted tag has among `names`. */
export function counterCounts(names: Iterable<string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const name of names) {
    const counter = parseCounterName(name);
    if (counter !== undefined) counts.set(counter.tag, (counts.get(counter.tag) ?? 0) + 1);
  }
  return counts;
}

/** The counter rows of `tag` among `names` (its periods' rows in leaf_alloc). */
export function countersOf(tag: string, names: Iterable<string>): string[] {
  const out: string[] = [];
  for (const name of names) if (parseCounterName(name)?.tag === tag) out.push(name);
  return out;
}

/**
 * Removes a tag's row as `removeTag` does, and a formatted tag's counter rows after it (their
 * high-water kept in frond_high_water as every row's): no node serves the tag once its counters are
 * gone (a node that finds no counter reads the tag's row before it creates one). Answers what the
 * tag's own row kept. Its format row stays (a tag added again under the name has the same format).
 */
export async function removeTagAndCounters(store: TagCatalogue, tag: string): Promise<bigint> {
  const entry = await store.tag(tag);
  if (entry === undefined) throw tagNotFound(tag);
  const kept = await store.removeTag(tag);
  if (entry.format === null) return kept;
  for (const name of countersOf(tag, await store.listTags())) {
    await store.removeTag(name).catch((error: unknown) => {
      // Removed by another node's clean-up, or another request, meanwhile.
      if (!(error instanceof FrondError && error.code === 'TAG_NOT_FOUND')) throw error;
    });
  }
  return kept;
}
