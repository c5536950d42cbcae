import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Clock, systemClock } from '../../core/clock.js';
import type { Logger, LogLevel } from '../../core/logger.js';
import { DEFAULT_SEGMENT_ALLOCATOR_OPTIONS, SegmentAllocator } from '../../core/segment-allocator.js';
import { LEAF_STEP_RULES } from '../../core/segment-step.js';
import { DEFAULT_SNOWFLAKE_OPTIONS, SnowflakeService } from '../../core/snowflake-service.js';
import { FencedStore } from '../../stores/fencing/fenced-store.js';
import type { OpenedStore } from '../../stores/store-backend.js';
import { openStore } from '../../stores/store-registry.js';
import { type CoordinatorConfig, openWorkerIdSource } from '../../worker-ids/worker-id-registry.js';
import type { ClusterLink } from '../cluster/worker-link.js';
import { createApp } from '../http/app.js';
import {
  createHttpServer,
  defaultMaxConnections,
  descriptorLimit,
  RESERVED_DESCRIPTORS,
  readTls,
} from '../http/http-server.js';
import { RateLimiter } from '../http/rate-limit.js';
import { type DeclaredOpaqueTag, OpaqueDeclaration } from '../opaque/opaque-config.js';
import { OpaqueSecret } from '../opaque/opaque-keys.js';
import { OpaqueTags } from '../opaque/opaque-tags.js';
import { Metrics } from '../ops/metrics.js';
import type { Readiness } from '../ops/ops-handlers.js';
import { StatsSampler } from '../ops/stats-sampler.js';
import { DEFAULT_METRICS_TAGS } from '../ops/tag-labels.js';
import { lockDataDir } from './data-dir-lock.js';

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

export interface RunningServer {
  url: string;
  server: Server;
  close(): Promise<void>;
}

/** Composes store, allocator, snowflake node and HTTP; nothing here is on the path of a request. */
export async function startServer(
  config: ServeConfig,
  logger: Logger,
  clock: Clock = systemClock,
): Promise<RunningServer> {
  const tls = config.tls && readTls(config.tls);
  // The sampler's pass over every tag yields between slices (setImmediate), so ID requests are answered in between.
  const stats = new StatsSampler(clock, { metricsTags: config.metricsTags ?? DEFAULT_METRICS_TAGS }, (next) =>
    setImmediate(next),
  );
  const metrics = new Metrics(stats);
  config.cluster?.provide({
    metrics: () => metrics.registry.getMetricsAsJSON(),
    stats: (query) => stats.snapshot(query),
  });
  const cleanups: (() => unknown)[] = [lockDataDir(config.dataDir)];
  const cleanup = async () => {
    for (const step of cleanups.reverse()) await step();
  };
  try {
    let store: OpenedStore | undefined;
    let segment: SegmentAllocator<OpenedStore> | undefined;
    let opaque: OpaqueTags | undefined;
    let declaration: OpaqueDeclaration | undefined;
    if (config.segment) {
      // Every load goes through the fence and the data dir's high-water (src/stores/fencing). The
      // store is closed whatever fails after it opened (an unreadable high-water file throws in the
      // constructor below): SQLite's worker thread would otherwise keep a failed start alive.
      const inner = openStore(config.store, { logger });
      cleanups.push(() => inner.close());
      store = new FencedStore(inner, {
        dataDir: config.dataDir,
        fenceSkip: config.fenceSkip,
        logger,
      });
      segment = new SegmentAllocator(
        store,
        clock,
        logger,
        {
          ...DEFAULT_SEGMENT_ALLOCATOR_OPTIONS,
          segmentWaitMs: config.segmentWaitMs,
          tagRefreshMs: config.tagRefreshMs,
          stepRules: { ...LEAF_STEP_RULES, maxStep: config.maxStep },
        },
        metrics,
      );
      await segment.start();
      const allocator = segment;
      cleanups.push(() => allocator.close());
      // Read once, never logged: only the fingerprint is shown (/readyz, frond tag list).
      const secret =
        config.opaqueSecret === undefined
          ? OpaqueSecret.fromEnvironment()
          : (config.opaqueSecret ?? undefined);
      opaque = new OpaqueTags(segment, secret, () => clock.now());
      if (config.opaqueTags !== undefined && config.opaqueTags.length > 0) {
        const declared = new OpaqueDeclaration(segment.store, opaque, config.opaqueTags, clock, logger);
        await declared.start();
        cleanups.push(() => declared.close());
        declaration = declared;
      }
      // A store that is down at start leaves every tag to be read on its first request.
      await opaque.preload().catch(() => {});
    }
    let snowflake: SnowflakeService | undefined;
    if (config.snowflake) {
      snowflake = await SnowflakeService.start(
        openWorkerIdSource(config.coordinator, {
          dataDir: config.dataDir,
          workerId: config.workerId,
          httpPort: config.port,
          recordAheadMs: DEFAULT_SNOWFLAKE_OPTIONS.recordAheadMs,
          clock,
          logger,
        }),
        clock,
        logger,
        {
          ...DEFAULT_SNOWFLAKE_OPTIONS,
          epoch: config.epoch,
          randomSequence: config.randomSequence,
          clockToleranceMs: config.clockToleranceMs,
          clockStartupWaitMs: config.clockStartupWaitMs,
        },
      );
      const service = snowflake;
      cleanups.push(() => service.close());
    }
    stats.attach(segment, snowflake, () => metrics.requestTotals());
    stats.start();
    cleanups.push(() => stats.stop());
    const handler = createApp({
      segment,
      snowflake,
      opaque,
      epoch: config.epoch,
      logger,
      // The one clock of the node: Leaf error bodies and page caching follow it as IDs do.
      now: () => clock.now(),
      access: { tokens: config.tokens, adminToken: config.adminToken },
      rateLimiter: config.rateLimit > 0 ? new RateLimiter(config.rateLimit, clock) : undefined,
      observer: metrics,
      ops: {
        stats,
        metrics,
        readiness: () => readiness(segment, snowflake, stats, opaque, declaration),
        cluster: config.cluster,
      },
    });
    const limit = descriptorLimit();
    const maxConnections = config.maxConnections ?? defaultMaxConnections(limit);
    if (limit !== undefined && maxConnections > limit - RESERVED_DESCRIPTORS) {
      logger.log('warn', 'http.connections_above_limit', {
        maxConnections,
        descriptorLimit: limit,
        message: `--max-connections ${maxConnections} leaves fewer than ${RESERVED_DESCRIPTORS} of ${limit} file descriptors (ulimit -n) for the store and the worker-ID record; raise the limit or lower --max-connections`,
      });
    }
    const server = createHttpServer(handler, {
      tls,
      requestTimeoutMs: config.requestTimeoutMs,
      maxConnections,
      logger,
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const { port } = server.address() as AddressInfo;
    const url = `${tls ? 'https' : 'http'}://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
    logger.log('info', 'listening', {
      url,
      segment: store?.description ?? 'off',
      snowflakeWorkerId: snowflake?.workerId ?? 'off',
      maxConnections,
      descriptorLimit: limit ?? 'unknown',
    });
    let closing: Promise<void> | undefined;
    return {
      url,
      server,
      close() {
        closing ??= (async () => {
          await closeHttp(server, config.shutdownTimeoutMs);
          await cleanup();
          logger.log('info', 'stopped', {});
        })();
        return closing;
      },
    };
  } catch (error) {
    await cleanup();
    throw error;
  }
}

/**
 * Ready when the node can serve: snowflake mode holds its worker ID, and segment mode has reached
 * its store (the last tag-list read or load worked) or has IDs buffered to ride out the outage.
 */
export function readiness(
  segment: SegmentAllocator | undefined,
  snowflake: SnowflakeService | undefined,
  stats: StatsSampler,
  opaque?: OpaqueTags,
  declaration?: OpaqueDeclaration,
): Readiness {
  const checks: Readiness['checks'] = {};
  if (opaque) {
    // Never the secret: its fingerprint, to compare across nodes (all must show the same).
    const fingerprint = opaque.fingerprint;
    const problem = declaration?.problem;
    checks.opaque = {
      ok: problem === undefined,
      detail:
        fingerprint === null
          ? 'no opaque-ID secret: opaque tags are refused on this node'
          : `opaque-ID secret fingerprint ${fingerprint}${problem === undefined ? '' : `; ${problem}`}`,
    };
  }
  if (snowflake) {
    // A lease-mode node that lost its lease answers 503 until it holds a worker ID again.
    const ok = snowflake.available;
    checks.snowflake = {
      ok,
      detail: ok ? `worker ID ${snowflake.workerId}` : 'worker ID lease lost; claiming a new one',
    };
  }
  if (segment) {
    const reachable = segment.storeReachable;
    const buffered = stats.anyBuffered();
    checks.segment = {
      ok: reachable || buffered,
      detail: reachable
        ? `store ${segment.store.description} reachable`
        : buffered
          ? 'store unreachable; serving buffered IDs'
          : 'store unreachable and nothing buffered',
    };
  }
  return { ready: Object.values(checks).every((check) => check.ok), checks };
}

/** Stops accepting, lets requests in flight finish, and cuts what is left after `timeoutMs`. */
function closeHttp(server: Server, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => server.closeAllConnections(), timeoutMs);
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    server.closeIdleConnections();
  });
}
