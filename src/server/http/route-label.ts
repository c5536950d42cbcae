/**
 * The `route` label of `frond_http_request_duration_seconds`, one per entry of the route table;
 * `other` for a path no route matched; `grpc_*` for a method of `frond.v1.Ids` on `--grpc-port`
 * (GRPC_ROUTES). In a file of its own so that metrics count requests by it without importing the
 * table, whose handlers import metrics.
 */
export type RouteLabel =
  | 'leaf_segment'
  | 'leaf_snowflake'
  | 'v1_segment'
  | 'v1_ranges'
  | 'v1_snowflake'
  | 'decode'
  | 'healthz'
  | 'cache'
  | 'db'
  | 'metrics'
  | 'dashboard'
  | 'stats'
  | 'readyz'
  | 'admin'
  | 'other'
  | GrpcRouteLabel;

/** The route label of each `frond.v1.Ids` method: a fixed set, as HTTP's routes are. */
export const GRPC_ROUTES = {
  Next: 'grpc_next',
  Batch: 'grpc_batch',
  Ranges: 'grpc_ranges',
  Snowflake: 'grpc_snowflake',
  Decode: 'grpc_decode',
} as const;

export type GrpcRouteLabel = (typeof GRPC_ROUTES)[keyof typeof GRPC_ROUTES];
