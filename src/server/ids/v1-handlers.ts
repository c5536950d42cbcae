import type { ServerResponse } from 'node:http';
import { FrondError } from '../../core/errors.js';
import type { IdRun } from '../../core/segment-buffer.js';
import { parseSnowflakeId, type SnowflakeLayout } from '../../core/snowflake-layout.js';
import { decodeTagPath } from '../../core/tag.js';
import { sendJson, sendJsonBytes, sendOneIdJson } from '../http/responses.js';
import type { RouteHandler } from '../http/router.js';
import type { IdModes } from './id-modes.js';
import { idsJson, issuedJson } from './ids-json.js';

/** The largest batch one request may ask for (Tinyid's batch.size.max is the same). */
export const MAX_COUNT = 10_000;

/**
 * The most IDs one `/v1/ranges` request may be granted: a second of a very busy client's demand,
 * and at 2^63 a tag's table outlasts 92 billion such grants, so no one request can drain it.
 */
export const MAX_RANGE_COUNT = 100_000_000;

/** frond's own ID routes: batches, ranges and decode, answered with frond's JSON (and its errors). */
export interface V1Handlers {
  v1Segment: RouteHandler;
  v1Ranges: RouteHandler;
  v1Snowflake: RouteHandler;
  v1Decode: RouteHandler;
}

/** `layout` is the one `/v1/snowflake/decode` decodes with, also when snowflake mode is off. */
export function createV1Handlers(
  layout: SnowflakeLayout,
  modes: IdModes,
  reportError: (res: ServerResponse, error: unknown) => void,
): V1Handlers {
  const { needSegment, needSnowflake } = modes;
  const fail = (res: ServerResponse) => (error: unknown) => reportError(res, error);

  return {
    v1Segment(_req, res, rawTag, query) {
      const allocator = needSegment();
      const tag = decodeTagPath(rawTag);
      const count = parseCount(query);
      // One ID that is ready is answered here, without a promise or a 'finish' listener for the
      // metrics (request-timing.ts): the same ID and bytes `many(tag, 1)` would have given.
      if (count === 1) {
        const id = allocator.tryOne(tag);
        if (typeof id === 'string') return sendJsonBytes(res, 200, issuedJson([id]));
        if (id !== undefined) return sendOneIdJson(res, String(id));
      }
      // A formatted tag's numbers are JSON strings too, always, even when they are all digits.
      allocator.many(tag, count).then((ids) => sendJsonBytes(res, 200, issuedJson(ids)), fail(res));
    },

    v1Ranges(_req, res, rawTag, query) {
      const allocator = needSegment();
      const tag = decodeTagPath(rawTag);
      const count = parseCount(query, MAX_RANGE_COUNT);
      allocator
        .ranges(tag, count)
        .then((runs) => sendJsonBytes(res, 200, rangesJson(runs, count)), fail(res));
    },

    v1Snowflake(_req, res, _param, query) {
      const service = needSnowflake();
      const count = parseCount(query);
      if (count === 1) {
        const id = service.tryNext();
        if (id !== undefined) return sendOneIdJson(res, id.toString());
      }
      service.nextMany(count).then((ids) => sendJsonBytes(res, 200, idsJson(ids)), fail(res));
    },

    v1Decode(_req, res, text) {
      const id = parseSnowflakeId(text);
      const parts = layout.decompose(id);
      sendJson(res, 200, {
        id: id.toString(),
        timestamp: parts.timestamp,
        time: new Date(parts.timestamp).toISOString(),
        workerId: parts.workerId,
        sequence: parts.sequence,
      });
    },
  };
}

/** `count` from the query: 1 when absent, else an integer from 1 to `max` (10,000 by default). */
export function parseCount(query: string, max = MAX_COUNT): number {
  if (query === '') return 1;
  const text = new URLSearchParams(query).get('count');
  if (text === null) return 1;
  const count = /^[0-9]{1,12}$/.test(text) ? Number(text) : Number.NaN;
  if (!(count >= 1 && count <= max)) {
    throw new FrondError(
      'INVALID_COUNT',
      `invalid count ${JSON.stringify(text.slice(0, 40))}: use an integer from 1 to ${max}`,
    );
  }
  return count;
}

/** `{"ranges":[{"start":"1000","end":"2000"},…],"count":N}`: runs `[start, end)`, decimal strings. */
export function rangesJson(runs: readonly IdRun[], count: number): Buffer {
  let body = '{"ranges":[';
  for (let i = 0; i < runs.length; i++) {
    const run = runs[i] as IdRun;
    body += `${i === 0 ? '' : ','}{"start":"${run.start}","end":"${run.end}"}`;
  }
  return Buffer.from(`${body}],"count":${count}}`, 'latin1');
}
