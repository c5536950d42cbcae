import type { IncomingMessage, ServerResponse } from 'node:http';
import { FrondError } from '../../core/errors.js';
import type { SegmentAllocator } from '../../core/segment-allocator.js';
import type { IdRun } from '../../core/segment-buffer.js';
import { decomposeSnowflake, parseSnowflakeId } from '../../core/snowflake-layout.js';
import type { SnowflakeService } from '../../core/snowflake-service.js';
import { decodeTagPath } from '../../core/tag.js';
import type { TagRow, TagStore } from '../../core/tag-admin.js';
import { disabled } from '../http/mode-disabled.js';
import { sendHtml, sendJson, sendJsonBytes, sendText } from '../http/responses.js';
import type { RouteHandler } from '../http/router.js';
import { LEAF_JSON_TYPE, type LeafErrorKind, missingParameter } from '../leaf/leaf-errors.js';
import {
  cachePageSlices,
  dbPageHead,
  dbRow,
  javaParseLong,
  LEAF_DECODE_ERROR,
  leafDecodeBody,
  PAGE_END,
} from '../leaf/leaf-pages.js';
import { CachedPage, PageChunks, runInSlices, SLICE_ROWS } from '../leaf/sliced-page.js';
import type { OpaqueTags } from '../opaque/opaque-tags.js';
import { TagIssuer } from '../opaque/tag-issuer.js';
import { FROND_VERSION } from '../ops/version.js';
import { idsJson } from './ids-json.js';

/** The largest batch one request may ask for (Tinyid's batch.size.max is the same). */
export const MAX_COUNT = 10_000;

/**
 * The most IDs one `/v1/ranges` request may be granted: a second of a very busy client's demand,
 * and at 2^63 a tag's table outlasts 92 billion such grants, so no one request can drain it.
 */
export const MAX_RANGE_COUNT = 100_000_000;

export interface IdHandlerDeps {
  /** Absent when segment mode is off (`--no-segment`). */
  segment: SegmentAllocator<TagStore> | undefined;
  /** Absent when snowflake mode is off (`--no-snowflake`). */
  snowflake: SnowflakeService | undefined;
  /** The epoch used to decode IDs, also when snowflake mode is off. */
  epoch: number;
  /** Which tags are opaque (`opaque-tags.ts`); every tag is plain when absent. */
  opaque?: OpaqueTags | undefined;
  /** The time a built `/cache` or `/db` page is kept by; the system clock when absent. */
  now?: () => number;
  /** `/readyz`'s answer, which `/healthz` reports without acting on it. */
  ops?: { readiness(): { ready: boolean } } | undefined;
}

/** The handlers behind the ID routes, Leaf's pages and `/healthz`; `route-table.ts` says where each answers. */
export interface IdHandlers {
  leafSegment: RouteHandler;
  leafSnowflake: RouteHandler;
  leafDecode: RouteHandler;
  cache: RouteHandler;
  db: RouteHandler;
  v1Segment: RouteHandler;
  v1Ranges: RouteHandler;
  v1Snowflake: RouteHandler;
  v1Decode: RouteHandler;
  health: RouteHandler;
}

/**
 * Straight to the allocator or the generator: an ID that is already buffered is answered without a
 * promise on the way. `reportError` answers what fails after the handler has returned.
 */
export function createIdHandlers(
  deps: IdHandlerDeps,
  reportError: (res: ServerResponse, error: unknown) => void,
  reportLeafError: (req: IncomingMessage, res: ServerResponse, error: unknown, kind: LeafErrorKind) => void,
): IdHandlers {
  const { segment, snowflake, epoch, opaque } = deps;
  const issuer = segment && new TagIssuer(segment, opaque);
  const fail = (res: ServerResponse) => (error: unknown) => reportError(res, error);
  const leafFail = (req: IncomingMessage, res: ServerResponse, kind: LeafErrorKind) => (error: unknown) =>
    reportLeafError(req, res, error, kind);

  // Leaf's two pages list every tag: built in slices and kept a second (sliced-page.ts).
  const now = deps.now ?? (() => Date.now());
  const cachePage =
    segment &&
    new CachedPage(() => runInSlices(cachePageSlices([...segment.buffersView()], SLICE_ROWS)), now);
  const dbPage = segment && new CachedPage(() => buildDbPage(segment.store), now);

  function needSegment(): TagIssuer {
    if (issuer === undefined) throw disabled('segment', '--no-segment');
    return issuer;
  }

  function needSnowflake(): SnowflakeService {
    if (snowflake === undefined) throw disabled('snowflake', '--no-snowflake');
    return snowflake;
  }

  return {
    leafSegment(req, res, rawTag) {
      const allocator = needSegment();
      // Leaf (Spring MVC) routes no empty key: `/api/segment/get/` is a 404 there.
      const path = stripSlash(rawTag);
      if (path === '')
        throw new FrondError('NOT_FOUND', 'no route: the tag after /api/segment/get/ is empty');
      // A tag that is buffered is valid; the allocator checks a new one before it asks the store.
      const tag = decodeTagPath(path);
      const id = allocator.tryOne(tag);
      if (id !== undefined) return sendText(res, String(id));
      allocator.one(tag).then((value) => sendText(res, String(value)), leafFail(req, res, 'segment'));
    },

    leafSnowflake(req, res, key) {
      const service = needSnowflake();
      // Leaf ignores the key but routes only a non-empty one.
      if (stripSlash(key) === '')
        throw new FrondError('NOT_FOUND', 'no route: the key after /api/snowflake/get/ is empty');
      const id = service.tryNext();
      if (id !== undefined) return sendText(res, id.toString());
      // The slow path waits out a small clock step back, or reports why it cannot.
      service.next().then((value) => sendText(res, value.toString()), leafFail(req, res, 'snowflake'));
    },

    leafDecode(_req, res, _param, query) {
      // Spring reads the parameter as Tomcat decodes a query (`+` is a space, `%2B` a plus sign).
      const text = new URLSearchParams(query).get('snowflakeId');
      if (text === null) throw missingParameter('snowflakeId');
      const id = javaParseLong(text);
      // Leaf answers 200 with errorMsg for what Long.parseLong refuses; clients may rely on it.
      const body = JSON.stringify(
        id === undefined ? { errorMsg: LEAF_DECODE_ERROR } : leafDecodeBody(id, epoch),
      );
      res.writeHead(200, { 'content-type': LEAF_JSON_TYPE, 'content-length': Buffer.byteLength(body) });
      res.end(body);
    },

    cache(req, res) {
      needSegment();
      (cachePage as CachedPage).get().then((html) => sendHtml(res, html), leafFail(req, res, 'page'));
    },

    db(req, res) {
      needSegment();
      (dbPage as CachedPage).get().then((html) => sendHtml(res, html), leafFail(req, res, 'page'));
    },

    v1Segment(_req, res, rawTag, query) {
      const allocator = needSegment();
      const tag = decodeTagPath(rawTag);
      const count = parseCount(query);
      allocator.many(tag, count).then((ids) => sendJsonBytes(res, 200, idsJson(ids)), fail(res));
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
      service.nextMany(count).then((ids) => sendJsonBytes(res, 200, idsJson(ids)), fail(res));
    },

    v1Decode(_req, res, text) {
      const id = parseSnowflakeId(text);
      const parts = decomposeSnowflake(id, epoch);
      sendJson(res, 200, {
        id: id.toString(),
        timestamp: parts.timestamp,
        time: new Date(parts.timestamp).toISOString(),
        workerId: parts.workerId,
        sequence: parts.sequence,
      });
    },

    // Liveness only: 200 while the process answers, whatever the store says (a restart would not
    // bring a store back). Whether to send traffic is /readyz's answer, shown here as `ready`.
    health(_req, res) {
      sendJson(res, 200, {
        status: 'ok',
        version: FROND_VERSION,
        checks: 'the process answers; send traffic by /readyz',
        ready: deps.ops ? deps.ops.readiness().ready : null,
        segment: segment
          ? {
              store: segment.store.description,
              reachable: segment.storeReachable,
              tags: segment.tags().length,
            }
          : null,
        snowflake: snowflake
          ? { workerId: snowflake.workerId, epoch: snowflake.epoch, available: snowflake.available }
          : null,
      });
    },
  };
}

function stripSlash(text: string): string {
  // Leaf (Spring MVC) serves `/api/segment/get/abc/` as `abc`.
  return text.endsWith('/') ? text.slice(0, -1) : text;
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

/** Rows of `leaf_alloc` read per query for `/db`: 500 took 3 to 10 ms on SQLite on a busy 2-core machine, 200 stay near 2. */
const DB_PAGE_ROWS = 200;

/** `/db`: the table a page of rows at a time, a turn of the event loop after each query and each SLICE_ROWS rows. */
async function buildDbPage(store: TagStore): Promise<Buffer> {
  const out = new PageChunks();
  out.text(dbPageHead());
  const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
  let after: string | undefined;
  for (;;) {
    const page = store.listRowsAfter
      ? await store.listRowsAfter(after, DB_PAGE_ROWS)
      : await store.listRows();
    await turn();
    for (let i = 0; i < page.length; i++) {
      out.row(dbRow(page[i] as TagRow));
      if ((i + 1) % SLICE_ROWS === 0) {
        out.flush();
        await turn();
      }
    }
    out.flush();
    const last = page.at(-1);
    if (store.listRowsAfter === undefined || page.length < DB_PAGE_ROWS || last === undefined) break;
    after = last.tag;
  }
  out.text(PAGE_END);
  return out.done();
}
