import type { ServerResponse } from 'node:http';
import { FrondError } from '../../core/errors.js';
import type { Gap } from '../../core/id-gaps.js';
import { formatDomain } from '../../core/opaque-codec.js';
import { isCounterName, type SegmentAllocator } from '../../core/segment-allocator.js';
import { assertValidTag, decodeTagPath } from '../../core/tag.js';
import { type CataloguedStore, tagNotFound } from '../../core/tag-catalogue.js';
import { disabled } from '../http/mode-disabled.js';
import { readBody } from '../http/request-body.js';
import { sendHtml, sendJson } from '../http/responses.js';
import type { RouteHandler } from '../http/router.js';
import { counterCounts } from '../opaque/format-setting.js';
import type { OpaqueTags } from '../opaque/opaque-tags.js';
import { addTag, opaqueJson, patchTag, removeTag, tagJson } from './admin-api.js';
import { DASHBOARD_HEADERS, DASHBOARD_HTML } from './dashboard-page.js';
import { gapJson, gapsPage, gapsQuery, recordReturnedRange } from './gap-routes.js';
import type { Metrics } from './metrics.js';
import type { Readiness } from './readiness.js';
import type { StatsSampler } from './stats-sampler.js';
import { MAX_STATS_TAGS, type StatsQuery } from './stats-snapshot.js';

export interface OpsDeps {
  stats: StatsSampler;
  metrics: Metrics | undefined;
  readiness: () => Readiness;
  /** In a `--workers` process: the whole node's metrics and stats (`cluster/worker-link.ts`), not this process's. */
  cluster?: { metricsText(): Promise<string>; stats(query?: StatsQuery): Promise<unknown> } | undefined;
  /** Records gaps in the store (a client's returned range); absent when segment mode is off. */
  recordGaps?: (gaps: readonly Gap[]) => Promise<void>;
}

/**
 * The handlers for the people who run frond: `/metrics`, `/dashboard`, `/v1/stats`, `/readyz`, and
 * the admin API `/v1/tags`; `http/route-table.ts` says where each answers and who may call it.
 */
export interface OpsHandlers {
  metrics: RouteHandler;
  dashboard: RouteHandler;
  stats: RouteHandler;
  readiness: RouteHandler;
  listTags: RouteHandler;
  addTag: RouteHandler;
  getTag: RouteHandler;
  patchTag: RouteHandler;
  removeTag: RouteHandler;
  decodeOpaque: RouteHandler;
  listGaps: RouteHandler;
  returnRange: RouteHandler;
}

export function createOpsHandlers(
  deps: OpsDeps,
  segment: SegmentAllocator<CataloguedStore> | undefined,
  reportError: (res: ServerResponse, error: unknown) => void,
  opaque?: OpaqueTags,
): OpsHandlers {
  const store = (): CataloguedStore => {
    if (segment === undefined) throw disabled('segment', '--no-segment');
    return segment.store;
  };
  const fail = (res: ServerResponse) => (error: unknown) => reportError(res, error);

  return {
    metrics(_req, res) {
      const metrics = deps.metrics;
      if (metrics === undefined) throw new FrondError('NOT_FOUND', 'metrics are off on this node');
      (deps.cluster ? deps.cluster.metricsText() : metrics.text()).then((text) => {
        res.writeHead(200, { 'content-type': metrics.contentType });
        res.end(text);
      }, fail(res));
    },

    dashboard(_req, res) {
      sendHtml(res, DASHBOARD_HTML, DASHBOARD_HEADERS);
    },

    // With `readiness`, what `/readyz` answers, so the dashboard shows it from the one poll.
    stats(_req, res, _param, query) {
      const asked = statsQuery(query);
      const cluster = deps.cluster;
      if (cluster === undefined)
        return sendJson(res, 200, { ...deps.stats.snapshot(asked), readiness: deps.readiness() });
      cluster
        .stats(asked)
        .then((body) => sendJson(res, 200, { ...(body as object), readiness: deps.readiness() }), fail(res));
    },

    readiness(_req, res) {
      const readiness = deps.readiness();
      sendJson(res, readiness.ready ? 200 : 503, readiness);
    },

    // A formatted tag's counters (one row per period) are not tags: left out, counted under their tag.
    listTags(_req, res) {
      const target = store();
      Promise.all([target.listRows(), target.listOpaque(), target.listFormats()]).then(
        ([rows, settings, formats]) => {
          const counters = counterCounts(rows.map((row) => row.tag));
          const formatOf = (tag: string) => {
            const format = formats.get(tag);
            return format && { ...format, counters: counters.get(tag) ?? 0 };
          };
          sendJson(res, 200, {
            opaqueFingerprint: opaque?.fingerprint ?? null,
            tags: rows
              .filter((row) => !isCounterName(row.tag))
              .map((row) =>
                tagJson(row, opaqueJson(opaque, row.tag, settings.get(row.tag)), formatOf(row.tag)),
              ),
          });
        },
        fail(res),
      );
    },

    addTag(req, res) {
      const target = store();
      readBody(req)
        .then((body) => addTag(target, body, opaque))
        .then((row) => sendJson(res, 201, row), fail(res));
    },

    getTag(_req, res, raw) {
      const tag = assertValidTag(decodeTagPath(raw));
      const target = store();
      target
        .tag(tag)
        .then((entry) => {
          if (entry === undefined) throw tagNotFound(tag);
          sendJson(res, 200, tagJson(entry, opaqueJson(opaque, tag, entry.opaque), entry.format));
        })
        .catch(fail(res));
    },

    patchTag(req, res, raw) {
      const tag = decodeTagPath(raw);
      const target = store();
      readBody(req)
        .then((body) => patchTag(target, tag, body, opaque))
        .then((row) => sendJson(res, 200, row), fail(res));
    },

    // This node reads its tag list again before it answers, which drops the tag's buffer (what it
    // held is a gap, never served again); the other nodes do at their next refresh.
    removeTag(_req, res, raw) {
      const tag = decodeTagPath(raw);
      const target = store();
      removeTag(target, tag)
        .then(async (removed) => {
          await segment?.refresh();
          sendJson(res, 200, removed);
        })
        .catch(fail(res));
    },

    // Every gap of one start on one page: `next` is a start, and the page after begins above it.
    listGaps(_req, res, raw, query) {
      const tag = decodeTagPath(raw);
      const { after, limit } = gapsQuery(query);
      gapsPage(store(), tag, after, limit).then((page) => sendJson(res, 200, page), fail(res));
    },

    // A client's unused range (the SDK's close): recorded as a gap, counted as given up here.
    returnRange(req, res, raw) {
      const tag = decodeTagPath(raw);
      const catalogue = store();
      const record = deps.recordGaps;
      if (record === undefined) throw disabled('segment', '--no-segment');
      // A page on another origin may POST text/plain without asking first (a CORS simple
      // request); JSON it can send only after a preflight, which frond never grants.
      if (!/^application\/json\s*(;|$)/i.test(req.headers['content-type'] ?? ''))
        throw new FrondError(
          'INVALID_ARGUMENT',
          'send the range as application/json: {"start":"…","end":"…"}',
        );
      readBody(req)
        .then((body) => recordReturnedRange({ catalogue, record, now: () => Date.now() }, tag, body))
        .then((gap) => {
          if (!gap.repeated) deps.metrics?.idsGivenUp(gap.tag, gap.reason, gap.end - gap.start);
          sendJson(res, gap.repeated ? 200 : 201, { tag: gap.tag, ...gapJson(gap) });
        }, fail(res));
    },

    // Support tooling: the segment ID (position in the tag's sequence) behind an opaque ID.
    decodeOpaque(_req, res, raw, query) {
      const tag = assertValidTag(decodeTagPath(raw));
      store();
      const text = new URLSearchParams(query).get('id');
      const badId = () => new FrondError('INVALID_ID', 'id must be the opaque ID, 1 to 19 decimal digits');
      const bad = text === null || !/^[0-9]{1,19}$/.test(text);
      if (bad && opaque === undefined) throw badId();
      if (opaque === undefined)
        throw new FrondError('OPAQUE_SECRET_MISSING', 'this node has no opaque-ID secret');
      // A formatted tag's number is read as it is written (its period and sequence): refused in
      // one line that says so, whatever the id looks like (opaqueTag refuses it the same way).
      opaque
        .formattedTag(tag)
        .then((formatted) => {
          if (formatted === undefined && bad) throw badId();
          return opaque.opaqueTag(tag);
        })
        .then((entry) =>
          sendJson(res, 200, {
            tag,
            id: text,
            domain: formatDomain(entry.codec.domain),
            segmentId: entry.codec.decode(BigInt(text as string)).toString(),
          }),
        )
        .catch(fail(res));
    },
  };
}

/** At most this many `tag=` in one `/v1/stats` query. */
const MAX_STATS_NAMED = 100;

/** `/v1/stats?limit=N` (the N busiest, 1 to MAX_STATS_TAGS) or `?tag=a&tag=b` (those tags, up to 100). */
export function statsQuery(query: string): StatsQuery {
  if (query === '') return {};
  const params = new URLSearchParams(query);
  const named = params.getAll('tag');
  const limit = params.get('limit');
  if (named.length > 0 && limit !== null)
    throw new FrondError('INVALID_ARGUMENT', 'ask /v1/stats for tag=… or for limit=…, not both');
  if (named.length > 0) {
    if (named.length > MAX_STATS_NAMED)
      throw new FrondError('INVALID_ARGUMENT', `at most ${MAX_STATS_NAMED} tag= in one /v1/stats query`);
    return { tags: named };
  }
  if (limit === null) return {};
  if (!/^[0-9]{1,4}$/.test(limit) || Number(limit) < 1 || Number(limit) > MAX_STATS_TAGS)
    throw new FrondError('INVALID_ARGUMENT', `limit must be a whole number from 1 to ${MAX_STATS_TAGS}`);
  return { limit: Number(limit) };
}
