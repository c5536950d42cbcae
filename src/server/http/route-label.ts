/**
 * The `route` label of `frond_http_request_duration_seconds`, one per entry of the route table;
 * `other` for a path no route matched. In a file of its own so that metrics count requests by it
 * without importing the table, whose handlers import metrics.
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
  | 'other';
