import type { ServerResponse } from 'node:http';
import { FrondError } from '../core/errors.js';
import type { SegmentAllocator } from '../core/segment-allocator.js';
import { assertValidTag, decodeTagPath } from '../core/tag.js';
import type { TagAdmin, TagStore } from '../core/tag-admin.js';
import { addTag, patchTag, readBody, tagJson } from './admin.js';
import { DASHBOARD_HTML } from './dashboard-page.js';
import { disabled } from './id-handlers.js';
import type { Metrics } from './metrics.js';
import { sendHtml, sendJson } from './responses.js';
import type { RouteHandler } from './router.js';
import type { StatsSampler } from './stats.js';

export interface Readiness {
  ready: boolean;
  /** Each condition with whether it holds and why, for the operator reading `/readyz`. */
  checks: Record<string, { ok: boolean; detail: string }>;
}

export interface OpsDeps {
  stats: StatsSampler;
  metrics: Metrics | undefined;
  readiness: () => Readiness;
}

/**
 * The handlers for the people who run frond: `/metrics`, `/dashboard`, `/v1/stats`, `/readyz`, and
 * the admin API `/v1/tags`; `route-table.ts` says where each answers and who may call it.
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
}

export function createOpsHandlers(
  deps: OpsDeps,
  segment: SegmentAllocator<TagStore> | undefined,
  reportError: (res: ServerResponse, error: unknown) => void,
): OpsHandlers {
  const store = (): TagAdmin => {
    if (segment === undefined) throw disabled('segment', '--no-segment');
    return segment.store;
  };
  const fail = (res: ServerResponse) => (error: unknown) => reportError(res, error);

  return {
    metrics(_req, res) {
      const metrics = deps.metrics;
      if (metrics === undefined) throw new FrondError('NOT_FOUND', 'metrics are off on this node');
      metrics.text().then((text) => {
        res.writeHead(200, { 'content-type': metrics.contentType });
        res.end(text);
      }, fail(res));
    },

    dashboard(_req, res) {
      sendHtml(res, DASHBOARD_HTML);
    },

    stats(_req, res) {
      sendJson(res, 200, deps.stats.snapshot());
    },

    readiness(_req, res) {
      const readiness = deps.readiness();
      sendJson(res, readiness.ready ? 200 : 503, readiness);
    },

    listTags(_req, res) {
      store()
        .listRows()
        .then((rows) => sendJson(res, 200, { tags: rows.map(tagJson) }), fail(res));
    },

    addTag(req, res) {
      const target = store();
      readBody(req)
        .then((body) => addTag(target, body))
        .then((row) => sendJson(res, 201, row), fail(res));
    },

    getTag(_req, res, raw) {
      const tag = assertValidTag(decodeTagPath(raw));
      store()
        .getTag(tag)
        .then((row) => {
          if (row === undefined) throw new FrondError('TAG_NOT_FOUND', `tag ${tag} has no row in leaf_alloc`);
          sendJson(res, 200, tagJson(row));
        })
        .catch(fail(res));
    },

    patchTag(req, res, raw) {
      const tag = decodeTagPath(raw);
      const target = store();
      readBody(req)
        .then((body) => patchTag(target, tag, body))
        .then((row) => sendJson(res, 200, row), fail(res));
    },
  };
}
