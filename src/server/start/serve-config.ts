import type { LogLevel } from '../../core/logger.js';
import type { CoordinatorConfig } from '../../worker-ids/worker-id-registry.js';
import type { ClusterLink } from '../cluster/worker-link.js';
import type { DeclaredOpaqueTag } from '../opaque/opaque-config.js';
import type { OpaqueSecret } from '../opaque/opaque-keys.js';

/**
 * What `startServer` needs, each field named as its setting in the CLI's option table and in the
 * core's options (`segmentWaitMs` is `--segment-wait-ms` is `SegmentBufferOptions.segmentWaitMs`).
 */
export interface ServeConfig {
  host: string;
  port: number;
  /** `sqlite:PATH`, `postgres://…` or `mysql://…`; the default is `sqlite:<dataDir>/frond.db`. */
  store: string;
  dataDir: string;
  workerId: number | undefined;
  /** ZooKeeper or etcd hands out worker IDs (`--zk`, `--etcd`); absent: the data dir's file. */
  coordinator?: CoordinatorConfig | undefined;
  segment: boolean;
  /** The opaque-ID secret; read from FROND_OPAQUE_SECRET(_FILE) when undefined, none when null. */
  opaqueSecret?: OpaqueSecret | null;
  /** Tags the configuration declares opaque (`--opaque-tag`): created or checked at start. */
  opaqueTags?: readonly DeclaredOpaqueTag[];
  snowflake: boolean;
  epoch: number;
  randomSequence: boolean;
  /** ms a request waits for a segment load when both buffers are empty. */
  segmentWaitMs: number;
  /** ms between two reads of the tag list. */
  tagRefreshMs: number;
  /** How many of the busiest tags get their own `tag` label in `/metrics` (the rest: `tag="(other)"`); default 100. */
  metricsTags?: number;
  maxStep: number;
  /** IDs a fence adds to every tag after a failover or a restore (docs/databases.md). */
  fenceSkip: number;
  /** ms of clock step back that is waited out while running. */
  clockToleranceMs: number;
  /** ms the start waits for a clock behind the last recorded timestamp before refusing. */
  clockStartupWaitMs: number;
  /** ms a graceful shutdown waits for requests in flight. */
  shutdownTimeoutMs: number;
  logLevel: LogLevel;
  /** Tokens that may ask for IDs (`--token`); empty: ID endpoints are open. */
  tokens: string[];
  /** The admin API's token; undefined: the admin API answers only on loopback. */
  adminToken: string | undefined;
  /** Paths of a PEM certificate and key: the node then speaks HTTPS. */
  tls: { cert: string; key: string } | undefined;
  /** Requests per second per client address; 0: no limit. */
  rateLimit: number;
  /** ms a request may take to arrive; then 408. */
  requestTimeoutMs: number;
  /** Connections held at once; undefined: the descriptor limit less `RESERVED_DESCRIPTORS`. */
  maxConnections: number | undefined;
  /** Set in a `--workers` process: metrics and stats are answered for all the processes. */
  cluster?: ClusterLink | undefined;
}
