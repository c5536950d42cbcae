import type { IncomingMessage, ServerResponse } from 'node:http';
import { isCounterName, type SegmentAllocator } from '../../core/segment-allocator.js';
import type { SnowflakeLayout } from '../../core/snowflake-layout.js';
import { decodeTagPath } from '../../core/tag.js';
import type { CataloguedStore, TagCatalogue, TagRow } from '../../core/tag-catalogue.js';
import { sendHtml, sendId, sendText } from '../http/responses.js';
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
import type { IssuedId } from '../opaque/tag-issuer.js';
import type { IdModes } from './id-modes.js';

/** Leaf's routes: its two ID routes, its decode, and its `/cache` and `/db` pages. */
export interface LeafHandlers {
  leafSegment: RouteHandler;
  leafSnowflake: RouteHandler;
  leafDecode: RouteHandler;
  cache: RouteHandler;
  db: RouteHandler;
}

export interface LeafHandlerDeps {
  /** Absent when segment mode is off: `/cache` and `/db` then fail as Leaf's did. */
  segment: SegmentAllocator<CataloguedStore> | undefined;
  /** The layout `/decodeSnowflakeId` decodes with: bits, time unit and epoch. */
  layout: SnowflakeLayout;
  /** The time a built `/cache` or `/db` page is kept by. */
  now: () => number;
}

/** Leaf's routes answer as Leaf's server did, failures included (`reportLeafError`). */
export function createLeafHandlers(
  deps: LeafHandlerDeps,
  modes: IdModes,
  reportLeafError: (req: IncomingMessage, res: ServerResponse, error: unknown, kind: LeafErrorKind) => void,
): LeafHandlers {
  const { segment, layout, now } = deps;
  const { needSegment, needSnowflake } = modes;
  const leafFail = (req: IncomingMessage, res: ServerResponse, kind: LeafErrorKind) => (error: unknown) =>
    reportLeafError(req, res, error, kind);

  // Leaf's two pages list every tag: built in slices and kept a second (leaf/sliced-page.ts).
  const cachePage =
    segment &&
    new CachedPage(
      () =>
        runInSlices(
          // A formatted tag's counters (tag U+001F period) are rows frond made, not tags: left out.
          cachePageSlices(
            [...segment.buffersView()].filter((buffer) => !isCounterName(buffer.tag)),
            SLICE_ROWS,
          ),
        ),
      now,
    );
  const dbPage = segment && new CachedPage(() => buildDbPage(segment.store), now);

  return {
    // The router hands over one non-empty path segment, as Spring MVC's `{key}` (leaf/spring-path.ts).
    leafSegment(req, res, rawTag) {
      const allocator = needSegment();
      // A tag that is buffered is valid; the allocator checks a new one before it asks the store.
      const tag = decodeTagPath(rawTag);
      const id = allocator.tryOne(tag);
      if (id !== undefined) return sendIssued(res, id);
      allocator.one(tag).then((value) => sendIssued(res, value), leafFail(req, res, 'segment'));
    },

    // Leaf ignores the key (the router routes only a non-empty one).
    leafSnowflake(req, res) {
      const service = needSnowflake();
      const id = service.tryNext();
      if (id !== undefined) return sendId(res, id.toString());
      // The slow path waits out a small clock step back, or reports why it cannot.
      service.next().then((value) => sendId(res, value.toString()), leafFail(req, res, 'snowflake'));
    },

    leafDecode(_req, res, _param, query) {
      // Spring reads the parameter as Tomcat decodes a query (`+` is a space, `%2B` a plus sign).
      const text = new URLSearchParams(query).get('snowflakeId');
      if (text === null) throw missingParameter('snowflakeId');
      const id = javaParseLong(text);
      // Leaf answers 200 with errorMsg for what Long.parseLong refuses; clients may rely on it.
      const body = JSON.stringify(
        id === undefined ? { errorMsg: LEAF_DECODE_ERROR } : leafDecodeBody(id, layout),
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
  };
}

/** One ID as Leaf answers it: the decimal, or a formatted tag's number as its text. */
function sendIssued(res: ServerResponse, id: IssuedId): void {
  if (typeof id === 'string') sendText(res, id);
  else sendId(res, String(id));
}

/** Rows of `leaf_alloc` read per query for `/db`: 500 took 3 to 10 ms on SQLite on a busy 2-core machine, 200 stay near 2. */
const DB_PAGE_ROWS = 200;

/** `/db`: the table a page of rows at a time, a turn of the event loop after each query and each SLICE_ROWS rows. */
async function buildDbPage(store: TagCatalogue): Promise<Buffer> {
  const out = new PageChunks();
  out.text(dbPageHead());
  const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
  let after: string | undefined;
  for (;;) {
    const page = await store.listRows(after, DB_PAGE_ROWS);
    await turn();
    for (let i = 0; i < page.length; i++) {
      const row = page[i] as TagRow;
      if (!isCounterName(row.tag)) out.row(dbRow(row));
      if ((i + 1) % SLICE_ROWS === 0) {
        out.flush();
        await turn();
      }
    }
    out.flush();
    const last = page.at(-1);
    if (page.length < DB_PAGE_ROWS || last === undefined) break;
    after = last.tag;
  }
  out.text(PAGE_END);
  return out.done();
}
