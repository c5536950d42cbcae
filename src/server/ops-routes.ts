import type { IncomingMessage, ServerResponse } from 'node:http';
import { FrondError } from '../core/errors.js';
import type { SegmentAllocator } from '../core/segment-allocator.js';
import type { TagAdmin, TagStore } from '../core/tag-admin.js';
import { type AccessOptions, checkAdminAccess } from './access.js';
import { addTag, patchTag, readBody, tagJson } from './admin.js';
import { DASHBOARD_HTML } from './dashboard-page.js';
import type { Metrics } from './metrics.js';
import { sendHtml, sendJson } from './responses.js';
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

type OpsHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  fail: (error: unknown) => void,
) => boolean;

/**
 * Routes for the people who run frond: `/metrics`, `/dashboard`, `/v1/stats`, `/readyz`, and the
 * admin API `/v1/tags`. Answers true when it took the request.
 */
export function createOpsRoutes(
  deps: OpsDeps,
  segment: SegmentAllocator<TagStore> | undefined,
  access: AccessOptions,
): OpsHandler {
  const store = (): TagAdmin => {
    if (segment === undefined)
      throw new FrondError('MODE_DISABLED', 'segment mode is off on this node (started with --no-segment)');
    return segment.store;
  };
  const getOnly = (req: IncomingMessage, path: string) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      throw new FrondError('METHOD_NOT_ALLOWED', `${req.method} is not allowed on ${path}; use GET`);
    }
  };

  return (req, res, path, fail) => {
    switch (path) {
      case '/metrics': {
        getOnly(req, path);
        const metrics = deps.metrics;
        if (metrics === undefined) throw new FrondError('NOT_FOUND', 'metrics are off on this node');
        metrics.text().then((text) => {
          res.writeHead(200, { 'content-type': metrics.contentType });
          res.end(text);
        }, fail);
        return true;
      }
      case '/dashboard':
        getOnly(req, path);
        sendHtml(res, DASHBOARD_HTML);
        return true;
      case '/v1/stats':
        getOnly(req, path);
        sendJson(res, 200, deps.stats.snapshot());
        return true;
      case '/readyz': {
        getOnly(req, path);
        const readiness = deps.readiness();
        sendJson(res, readiness.ready ? 200 : 503, readiness);
        return true;
      }
      case '/v1/tags':
        checkAdminAccess(req, access);
        if (req.method === 'GET') {
          store()
            .listRows()
            .then((rows) => sendJson(res, 200, { tags: rows.map(tagJson) }), fail);
        } else if (req.method === 'POST') {
          const target = store();
          readBody(req)
            .then((body) => addTag(target, body))
            .then((row) => sendJson(res, 201, row), fail);
        } else {
          throw new FrondError(
            'METHOD_NOT_ALLOWED',
            `${req.method} is not allowed on /v1/tags; use GET or POST`,
          );
        }
        return true;
    }
    if (!path.startsWith('/v1/tags/')) return false;
    checkAdminAccess(req, access);
    const tag = path.slice('/v1/tags/'.length);
    const target = store();
    if (req.method === 'PATCH') {
      readBody(req)
        .then((body) => patchTag(target, tag, body))
        .then((row) => sendJson(res, 200, row), fail);
    } else if (req.method === 'GET') {
      target
        .getTag(tag)
        .then((row) => {
          if (row === undefined) throw new FrondError('TAG_NOT_FOUND', `tag ${tag} has no row in leaf_alloc`);
          sendJson(res, 200, tagJson(row));
        })
        .catch(fail);
    } else {
      throw new FrondError(
        'METHOD_NOT_ALLOWED',
        `${req.method} is not allowed on /v1/tags/{tag}; use GET or PATCH`,
      );
    }
    return true;
  };
}
