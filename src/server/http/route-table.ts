import type { IdHandlers } from '../ids/id-handlers.js';
import type { OpsHandlers } from '../ops/ops-handlers.js';
import type { RouteLabel } from './route-label.js';
import type { Route } from './router.js';

/**
 * Where frond's own API lives: a path no route takes answers frond's JSON error under these, and
 * Leaf's server's 404 anywhere else (router.ts), so a Leaf client sees Leaf's answers on every path
 * it could send.
 */
export const FROND_PATHS = ['/v1', '/healthz', '/readyz', '/metrics', '/dashboard'] as const;

/**
 * Every route of the HTTP API, in one place: path, methods, who may call it, handler and metrics
 * label. The first match wins; the paths do not overlap, so the order only puts the one-ID routes
 * first, where the fewest comparisons are made. The operator routes are left out when `ops` is.
 */
export function routeTable(id: IdHandlers, ops: OpsHandlers | undefined): Route<RouteLabel>[] {
  const table: Route<RouteLabel>[] = [
    // Leaf's routes answer any method, as Spring MVC did; frond's own answer GET only.
    // Their failures are Leaf's too: Spring Boot's error JSON (leaf/leaf-errors.ts). HEAD and OPTIONS on
    // the two ID routes never reach the handler, so they use up no ID. Like Spring, they ignore
    // query parameters they do not take (a Leaf client's cache-buster must not break).
    {
      path: '/api/segment/get/{tag}',
      label: 'leaf_segment',
      access: 'id',
      methods: { any: id.leafSegment },
      leafErrors: 'segment',
      issuesIds: true,
      query: 'any',
    },
    {
      path: '/api/snowflake/get/{key}',
      label: 'leaf_snowflake',
      access: 'id',
      methods: { any: id.leafSnowflake },
      leafErrors: 'snowflake',
      issuesIds: true,
      query: 'any',
    },
    {
      path: '/decodeSnowflakeId',
      label: 'decode',
      access: 'open',
      methods: { any: id.leafDecode },
      leafErrors: 'page',
      query: 'any',
    },
    {
      path: '/cache',
      label: 'cache',
      access: 'open',
      methods: { any: id.cache },
      leafErrors: 'page',
      query: 'any',
    },
    { path: '/db', label: 'db', access: 'open', methods: { any: id.db }, leafErrors: 'page', query: 'any' },
    {
      path: '/v1/segment/{tag}',
      label: 'v1_segment',
      access: 'id',
      methods: { GET: id.v1Segment },
      query: ['count'],
    },
    {
      path: '/v1/snowflake',
      label: 'v1_snowflake',
      access: 'id',
      methods: { GET: id.v1Snowflake },
      query: ['count'],
    },
    {
      path: '/v1/ranges/{tag}',
      label: 'v1_ranges',
      access: 'id',
      methods: { GET: id.v1Ranges },
      query: ['count'],
    },
    { path: '/v1/snowflake/decode/{id}', label: 'decode', access: 'open', methods: { GET: id.v1Decode } },
    // A health checker is never told 429: --rate-limit leaves /healthz and /readyz alone.
    {
      path: '/healthz',
      label: 'healthz',
      access: 'open',
      methods: { GET: id.health, HEAD: id.health },
      rateLimited: false,
    },
  ];
  if (ops === undefined) return table;
  return [
    ...table,
    { path: '/metrics', label: 'metrics', access: 'open', methods: { GET: ops.metrics, HEAD: ops.metrics } },
    {
      path: '/dashboard',
      label: 'dashboard',
      access: 'open',
      methods: { GET: ops.dashboard, HEAD: ops.dashboard },
    },
    {
      path: '/v1/stats',
      label: 'stats',
      access: 'open',
      methods: { GET: ops.stats, HEAD: ops.stats },
      query: ['limit', 'tag'],
    },
    {
      path: '/readyz',
      label: 'readyz',
      access: 'open',
      methods: { GET: ops.readiness, HEAD: ops.readiness },
      rateLimited: false,
    },
    { path: '/v1/tags', label: 'admin', access: 'admin', methods: { GET: ops.listTags, POST: ops.addTag } },
    // Before /v1/tags/{tag}, which would take its paths too.
    {
      path: '/v1/tags/{tag}/gaps',
      label: 'admin',
      access: 'admin',
      methods: { GET: ops.listGaps, POST: ops.returnRange },
      // A client returns what it was granted with the token it was granted it with.
      methodAccess: { POST: 'id' },
      query: ['after', 'limit'],
    },
    {
      path: '/v1/tags/{tag}',
      label: 'admin',
      access: 'admin',
      methods: { GET: ops.getTag, PATCH: ops.patchTag, DELETE: ops.removeTag },
    },
    {
      path: '/v1/opaque/decode/{tag}',
      label: 'admin',
      access: 'admin',
      methods: { GET: ops.decodeOpaque },
      query: ['id'],
    },
  ];
}
