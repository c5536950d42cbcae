/** From the most verbose to the least. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;

export type LogLevel = (typeof LOG_LEVELS)[number];

/** How log lines are written: JSON lines, plain lines for a person, or plain on a terminal only. */
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const;

export type LogFormat = (typeof LOG_FORMATS)[number];

/**
 * Every event frond logs, by the layer that logs it. A union, so that a misspelt event fails
 * typecheck instead of reaching operators' alerts under a new name. Metrics do not read these: they
 * come from `CoreObserver` and the request observer.
 */
export type LogEvent =
  // A node's life (src/cli, src/server).
  | 'listening'
  | 'config.warning'
  | 'stopped'
  | 'shutdown'
  | 'shutdown_failed'
  | 'cluster.forked'
  | 'worker.listening'
  | 'worker.stopped'
  | 'worker.exited'
  | 'http.client_error'
  | 'http.client_aborted'
  | 'http.connections_above_limit'
  | 'connections.above_limit'
  | 'http.no_ipv6'
  | 'http.internal_error'
  | 'grpc.internal_error'
  | 'grpc.library'
  | 'grpc.connections_full'
  | 'resp.listening'
  | 'resp.protocol_error'
  | 'resp.connections_full'
  | 'resp.internal'
  // Segment mode (src/core) and its stores (src/stores).
  | 'opaque.declared'
  | 'format.counters_removed'
  | 'format.declared'
  | 'format.declaration_unchecked'
  | 'format.declaration_refused'
  | 'format.cleanup_failed'
  | 'opaque.declaration_unchecked'
  | 'opaque.declaration_refused'
  | 'segment.loaded'
  | 'segment.load_failed'
  | 'segment.step_changed'
  | 'segment.kind_changed'
  | 'segment.refresh_failed'
  | 'segment.tag_dropped'
  | 'segment.tag_unservable'
  | 'segment.fence_needed'
  | 'segment.fenced'
  | 'segment.fence_found'
  | 'segment.handed_back'
  | 'segment.hand_back_failed'
  | 'segment.hand_back_summary'
  | 'segment.look_ahead_unread'
  | 'segment.release_unrecorded'
  | 'segment.crash_gaps'
  | 'segment.crash_gaps_unrecorded'
  | 'segment.fence_gap_unrecorded'
  | 'store.back'
  | 'store.lost'
  | 'store.unchecked'
  | 'store.connection_lost'
  // Snowflake mode (src/core) and its worker-ID sources (src/workers).
  | 'snowflake.started'
  | 'snowflake.clock_behind_at_start'
  | 'snowflake.clock_behind_lease'
  | 'snowflake.clock_moved_backwards'
  | 'snowflake.record_failed'
  | 'snowflake.worker_file_missing'
  | 'snowflake.worker_id_drawn'
  | 'snowflake.regain_failed'
  | 'snowflake.worker_id_lost'
  | 'snowflake.worker_id_regained'
  | 'snowflake.time_bits_running_out'
  | 'worker.cache_ignored'
  | 'worker.cache_mismatch'
  | 'worker.claim_waiting'
  | 'worker.clock_compared'
  | 'worker.connection_lost'
  | 'worker.heartbeat_failed'
  | 'worker.holder_check'
  | 'worker.leaf_cache_failed'
  | 'worker.lease_lost'
  | 'worker.lease_regained'
  | 'worker.reclaim_failed'
  | 'worker.release_failed'
  | 'worker.report_failed'
  | 'worker.report_resumed'
  | 'worker.zookeeper_client_replaced'
  | 'worker.zookeeper_registered'
  | 'worker.zookeeper_unreachable_using_cache';

/** One method, so the core forces no logging library on anyone. */
export interface Logger {
  log(level: LogLevel, event: LogEvent, fields?: Record<string, unknown>): void;
}

export const silentLogger: Logger = { log() {} };
