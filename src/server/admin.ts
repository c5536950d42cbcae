import type { IncomingMessage } from 'node:http';
import { FrondError } from '../core/errors.js';
import { assertStart, assertStep, assertValidTag, parseDecimal } from '../core/tag.js';
import type { TagAdmin, TagRow } from '../core/tag-admin.js';

/** Admin bodies are a few fields; 16 KiB is generous and keeps a client from streaming megabytes. */
export const MAX_BODY_BYTES = 16 * 1024;

export function readBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<string> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) return Promise.reject(tooLarge(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(tooLarge(limit));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function tooLarge(limit: number): FrondError {
  return new FrondError('PAYLOAD_TOO_LARGE', `the request body is over ${limit} bytes`);
}

function parseObject(text: string, allowed: readonly string[]): Record<string, unknown> {
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

function integerField(body: Record<string, unknown>, field: string, fallback: number, max: number): number {
  const value = body[field];
  if (value === undefined) return fallback;
  const n = typeof value === 'string' && /^[0-9]+$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0 || n > max) {
    throw new FrondError('INVALID_ARGUMENT', `${field} must be an integer from 0 to ${max}`);
  }
  return n;
}

/**
 * `start` of a new tag: a JSON number while it is a safe integer, else a decimal string (a JSON
 * number above 2^53 has already been rounded by the time it is read, so it is refused, not guessed).
 */
function startField(body: Record<string, unknown>, step: number): bigint {
  const value = body.start;
  if (value === undefined) return assertStart(1n, step);
  let start: bigint | undefined;
  if (typeof value === 'number' && Number.isSafeInteger(value)) start = BigInt(value);
  else if (typeof value === 'string') start = parseDecimal(value);
  if (start === undefined) {
    throw new FrondError(
      'INVALID_ARGUMENT',
      'start must be an integer: a JSON number up to 2^53 - 1, or a decimal string ("9223372036854000000") for any signed 64-bit value',
    );
  }
  return assertStart(start, step);
}

export function tagJson(row: TagRow) {
  return {
    tag: row.tag,
    maxId: row.maxId.toString(),
    step: row.step,
    description: row.description,
    updateTime: row.updateTime?.toISOString() ?? null,
  };
}

/** `POST /v1/tags` with `{"tag", "step", "start"?, "description"?}`; the first ID is `start` (default 1). */
export async function addTag(store: TagAdmin, text: string): Promise<ReturnType<typeof tagJson>> {
  const body = parseObject(text, ['tag', 'step', 'start', 'description']);
  if (typeof body.tag !== 'string') throw new FrondError('INVALID_ARGUMENT', 'tag must be a string');
  const tag = assertValidTag(body.tag);
  if (body.step === undefined) throw new FrondError('INVALID_ARGUMENT', 'step is required');
  const step = assertStep(integerField(body, 'step', 0, Number.MAX_SAFE_INTEGER));
  const start = startField(body, step);
  const description = body.description ?? null;
  if (description !== null && (typeof description !== 'string' || description.length > 256)) {
    throw new FrondError('INVALID_ARGUMENT', 'description must be a string of at most 256 characters');
  }
  await store.addTag({ tag, step, start, description });
  const row = await store.getTag(tag);
  if (row === undefined) throw new FrondError('INTERNAL', `tag ${tag} vanished right after it was added`);
  return tagJson(row);
}

/** `PATCH /v1/tags/{tag}` with `{"step"}`: running nodes use it from their next segment load. */
export async function patchTag(
  store: TagAdmin,
  rawTag: string,
  text: string,
): Promise<ReturnType<typeof tagJson>> {
  const tag = assertValidTag(rawTag);
  const body = parseObject(text, ['step']);
  if (body.step === undefined) throw new FrondError('INVALID_ARGUMENT', 'step is required');
  await store.setStep(tag, assertStep(integerField(body, 'step', 0, Number.MAX_SAFE_INTEGER)));
  const row = await store.getTag(tag);
  if (row === undefined) throw new FrondError('TAG_NOT_FOUND', `tag ${tag} has no row in leaf_alloc`);
  return tagJson(row);
}
