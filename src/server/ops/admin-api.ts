import { FrondError } from '../../core/errors.js';
import { assertOpaqueStart, formatDomain, type OpaqueDomain, parseDomain } from '../../core/opaque-codec.js';
import { assertStart, assertStep, assertValidTag, MAX_TABLE_STEP, parseDecimal } from '../../core/tag.js';
import {
  DEFAULT_TAG_STEP,
  type FormatSetting,
  type OpaqueSetting,
  type TagCatalogue,
  type TagRow,
  tagNotFound,
} from '../../core/tag-catalogue.js';
import { newFormatSetting, removeTagAndCounters } from '../opaque/format-setting.js';

/** The body as a JSON object of `allowed` fields only; anything else is INVALID_ARGUMENT in one line. */
export function parseObject(text: string, allowed: readonly string[]): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new FrondError('INVALID_ARGUMENT', 'the body is not JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new FrondError('INVALID_ARGUMENT', 'the body must be a JSON object');
  }
  const unknown = Object.keys(value).find((key) => !allowed.includes(key));
  if (unknown !== undefined) {
    throw new FrondError(
      'INVALID_ARGUMENT',
      `unknown field ${JSON.stringify(unknown)}; allowed: ${allowed.join(', ')}`,
    );
  }
  return value as Record<string, unknown>;
}

function integerField(
  body: Record<string, unknown>,
  field: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const value = body[field];
  if (value === undefined) return fallback;
  const n = typeof value === 'string' && /^[0-9]+$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new FrondError('INVALID_ARGUMENT', `${field} must be an integer from ${min} to ${max}`);
  }
  return n;
}

/**
 * An ID in a body: a JSON number while it is a safe integer, else a decimal string (a JSON number
 * above 2^53 has already been rounded by the time it is read, so it is refused, not guessed).
 */
export function idValue(value: unknown): bigint | undefined {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  return typeof value === 'string' ? parseDecimal(value) : undefined;
}

/**
 * `start` of a new tag: a JSON number while it is a safe integer, else a decimal string (a JSON
 * number above 2^53 has already been rounded by the time it is read, so it is refused, not guessed).
 */
function startField(body: Record<string, unknown>, step: number): bigint {
  const value = body.start;
  if (value === undefined) return assertStart(1n, step);
  const start = idValue(value);
  if (start === undefined) {
    throw new FrondError(
      'INVALID_ARGUMENT',
      'start must be an integer: a JSON number up to 2^53 - 1, or a decimal string ("9223372036854000000") for any signed 64-bit value',
    );
  }
  return assertStart(start, step);
}

/** `step`, in the table's range; the message names the range that holds (1 to 2^31 − 1). */
function stepField(body: Record<string, unknown>): number {
  return assertStep(integerField(body, 'step', DEFAULT_TAG_STEP, 1, MAX_TABLE_STEP));
}

/**
 * An opaque tag's setting as the admin API shows it: the domain, the key check stored with it, and
 * whether this node's secret makes the same (null: the node has no secret). Never a key.
 */
export interface OpaqueJson {
  domain: string;
  keyCheck: string;
  keyMatches: boolean | null;
}

/**
 * A formatted tag as the admin API shows it: its format and zone, as `POST /v1/tags` takes them,
 * and how many counter rows (one per period served, until the clean-up removes old ones) it has.
 */
export interface FormatJson extends FormatSetting {
  counters?: number;
}

export function tagJson(row: TagRow, opaque?: OpaqueJson | null, format?: FormatJson | null) {
  return {
    tag: row.tag,
    maxId: row.maxId.toString(),
    step: row.step,
    description: row.description,
    updateTime: row.updateTime?.toISOString() ?? null,
    // Only an opaque tag has the field: a plain tag's row reads as it did before opaque tags.
    ...(opaque === undefined || opaque === null ? {} : { opaque }),
    // Likewise only a formatted tag has these.
    ...(format === undefined || format === null ? {} : format),
  };
}

/** What the admin API needs of the opaque tags (`OpaqueTags`). */
export interface OpaqueAdmin {
  settingFor(tag: string, domain: OpaqueDomain): OpaqueSetting;
  matches(tag: string, setting: OpaqueSetting): boolean | null;
}

export function opaqueJson(
  opaque: OpaqueAdmin | undefined,
  tag: string,
  setting: OpaqueSetting | null | undefined,
): OpaqueJson | null {
  if (setting === null || setting === undefined) return null;
  return { ...setting, keyMatches: opaque ? opaque.matches(tag, setting) : null };
}

/** `opaque` of a body: absent, null (plain) or a domain (`bits:63`, `digits:11`). */
function opaqueField(body: Record<string, unknown>): OpaqueDomain | null | undefined {
  const value = body.opaque;
  if (value === undefined || value === null) return value;
  if (typeof value !== 'string')
    throw new FrondError(
      'INVALID_ARGUMENT',
      'opaque must be a domain such as "bits:63" or "digits:11", or null',
    );
  return parseDomain(value);
}

function descriptionField(body: Record<string, unknown>): string | null {
  const description = body.description ?? null;
  if (description !== null && (typeof description !== 'string' || description.length > 256)) {
    throw new FrondError('INVALID_ARGUMENT', 'description must be a string of at most 256 characters');
  }
  return description;
}

/**
 * `format` and `timeZone` of a body (docs/formats.md): absent for a plain or opaque tag; else the
 * setting checked (`newFormatSetting`: one line naming what is wrong, 400). A formatted tag numbers
 * every period from 1, so `start` has no meaning for it and is refused rather than ignored.
 */
function formatField(tag: string, body: Record<string, unknown>): FormatSetting | undefined {
  const { format, timeZone } = body;
  if (format === undefined || format === null) {
    if (timeZone !== undefined && timeZone !== null)
      throw new FrondError('INVALID_ARGUMENT', 'timeZone goes with format: give both, or neither');
    return undefined;
  }
  if (typeof format !== 'string')
    throw new FrondError('INVALID_ARGUMENT', 'format must be a string such as "ORD-{yyyy}{MM}{dd}-{seq:6}"');
  if (timeZone !== undefined && timeZone !== null && typeof timeZone !== 'string')
    throw new FrondError('INVALID_ARGUMENT', 'timeZone must be an IANA name such as "Europe/Berlin"');
  const setting = newFormatSetting(tag, format, timeZone ?? undefined, body.opaque);
  if (body.start !== undefined)
    throw new FrondError(
      'INVALID_ARGUMENT',
      `tag ${tag}: a formatted tag numbers each period from 1; start does not apply to it`,
    );
  return setting;
}

/**
 * `POST /v1/tags` with `{"tag", "step"?, "start"?, "description"?}`: the first ID is `start`
 * (default 1), the step defaults to 1000 as in `frond tag add`.
 */
export async function addTag(
  store: TagCatalogue,
  text: string,
  opaque?: OpaqueAdmin,
): Promise<ReturnType<typeof tagJson>> {
  const body = parseObject(text, ['tag', 'step', 'start', 'description', 'opaque', 'format', 'timeZone']);
  if (typeof body.tag !== 'string') throw new FrondError('INVALID_ARGUMENT', 'tag must be a string');
  const tag = assertValidTag(body.tag);
  const step = stepField(body);
  const format = formatField(tag, body);
  if (format !== undefined) {
    await store.addTag({ tag, step, start: 1n, description: descriptionField(body), format });
    const entry = await store.tag(tag);
    if (entry === undefined)
      throw new FrondError(
        'TAG_NOT_FOUND',
        `tag ${tag} was added, then removed by another request before it was read back`,
      );
    return tagJson(entry, null, entry.format ?? format);
  }
  const start = startField(body, step);
  const description = descriptionField(body);
  const domain = opaqueField(body);
  let setting: OpaqueSetting | undefined;
  if (domain !== undefined && domain !== null) {
    // An opaque tag's segment IDs are 1..capacity: a first ID outside could never be served.
    assertOpaqueStart(start, domain);
    if (opaque === undefined)
      throw new FrondError(
        'OPAQUE_SECRET_MISSING',
        `tag ${tag}: this node has no opaque-ID secret to make an opaque tag with`,
      );
    setting = opaque.settingFor(tag, domain);
  }
  await store.addTag({ tag, step, start, description }, setting);
  const entry = await store.tag(tag);
  // Removed by another request between the add and this read (seen: DELETE racing POST).
  if (entry === undefined)
    throw new FrondError(
      'TAG_NOT_FOUND',
      `tag ${tag} was added, then removed by another request before it was read back`,
    );
  return tagJson(entry, opaqueJson(opaque, tag, entry.opaque));
}

/**
 * `PATCH /v1/tags/{tag}` with `{"step"}`: the length of a node's first two segments of the tag, and
 * the floor of a running node's dynamic step from its next load (as Leaf: segment-step.ts).
 */
export async function patchTag(
  store: TagCatalogue,
  rawTag: string,
  text: string,
  opaque?: OpaqueAdmin,
): Promise<ReturnType<typeof tagJson>> {
  const tag = assertValidTag(rawTag);
  const body = parseObject(text, ['step', 'opaque']);
  if (body.step === undefined && body.opaque === undefined)
    throw new FrondError('INVALID_ARGUMENT', 'step or opaque is required');
  const domain = opaqueField(body);
  if (domain !== undefined) {
    // The domain is fixed when the tag is created: a plain tag made opaque, or an opaque one given
    // another domain (another key), could answer an ID it already answered. Only the same is taken.
    const current = await store.tag(tag);
    if (current === undefined) throw tagNotFound(tag);
    const asked = domain === null ? null : formatDomain(domain);
    if ((current.opaque?.domain ?? null) !== asked)
      throw new FrondError(
        'OPAQUE_TAG_FIXED',
        `tag ${tag} is ${current.opaque ? `opaque ${current.opaque.domain}` : 'plain'}: a tag's opaque domain is fixed when it is created (another domain or key could repeat an ID already handed out); create a new tag with {"opaque": ${JSON.stringify(asked)}}`,
      );
  }
  if (body.step !== undefined) await store.setStep(tag, stepField(body));
  const entry = await store.tag(tag);
  if (entry === undefined) throw tagNotFound(tag);
  return tagJson(entry, opaqueJson(opaque, tag, entry.opaque), entry.format);
}

/**
 * `DELETE /v1/tags/{tag}`: the row deleted, its max_id kept in frond_high_water (and an opaque
 * tag's setting in frond_tag_options), so the name never comes back below what it served. Answers
 * the max_id kept: a tag added again under the name starts there or above.
 */
export async function removeTag(
  store: TagCatalogue,
  rawTag: string,
): Promise<{ tag: string; maxId: string }> {
  const tag = assertValidTag(rawTag);
  const kept = await removeTagAndCounters(store, tag);
  return { tag, maxId: kept.toString() };
}
