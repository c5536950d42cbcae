import cluster from 'node:cluster';
import { systemClock } from '../core/clock.js';
import { describeError, FrondError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { runPrimary, runWorker } from '../server/cluster/cluster.js';
import { type DeclaredOpaqueTag, parseDeclaredOpaqueTag } from '../server/opaque/opaque-config.js';
import { createPinoLogger } from '../server/start/pino-logger.js';
import type { ServeConfig } from '../server/start/serve-config.js';
import { startServer } from '../server/start/start-server.js';
import {
  COORDINATOR_BACKENDS,
  type CoordinatorConfig,
  coordinatorConfig,
  flagOfKind,
} from '../worker-ids/worker-id-registry.js';
import { readConfigFile, readLeafProperties } from './config-sources.js';
import { SERVE, SERVE_OPTIONS, type ServeSettings, WORKER_ID } from './option-table.js';
import { inWords, parseCommand, parseRaw, type RawValues, usage } from './options.js';
import { storeOf } from './store-options.js';

/** The checks that span settings; each setting's own type and bounds come from the option table. */
export function serveConfig(settings: ServeSettings): ServeConfig {
  const { segment, snowflake } = settings;
  if (!segment && !snowflake) throw usage('--no-segment and --no-snowflake together leave nothing to serve');
  return {
    host: settings.host,
    port: settings.port,
    store: storeOf(settings),
    dataDir: settings.dataDir,
    workerId: settings.workerId,
    segment,
    snowflake,
    // Without snowflake mode the worker-ID flags mean nothing (a leaf.properties may still name ZooKeeper).
    coordinator: snowflake ? coordinatorOf(settings) : undefined,
    epoch: settings.epoch,
    randomSequence: settings.randomSequence,
    segmentWaitMs: settings.segmentWaitMs,
    tagRefreshMs: settings.tagRefreshMs,
    metricsTags: settings.metricsTags,
    maxStep: settings.maxStep,
    fenceSkip: settings.fenceSkip,
    clockToleranceMs: settings.clockToleranceMs,
    clockStartupWaitMs: settings.clockStartupWaitMs,
    shutdownTimeoutMs: settings.shutdownTimeoutMs,
    logLevel: settings.logLevel,
    tokens: settings.tokens.map((token) => checkedToken(token, '--token')),
    adminToken:
      settings.adminToken === undefined ? undefined : checkedToken(settings.adminToken, '--admin-token'),
    tls: tlsOf(settings),
    rateLimit: settings.rateLimit,
    requestTimeoutMs: settings.requestTimeoutMs,
    maxConnections: settings.maxConnections,
    opaqueTags: declaredOpaqueTags(settings),
  };
}

/** `--opaque-tag TAG=DOMAIN`, each tag once; only segment mode has tags. */
function declaredOpaqueTags(settings: ServeSettings): DeclaredOpaqueTag[] {
  const declared = settings.opaqueTags.map((text) => parseDeclaredOpaqueTag(text, '--opaque-tag'));
  if (declared.length > 0 && !settings.segment)
    throw usage('--opaque-tag declares segment tags, and --no-segment turns segment mode off: drop one');
  const seen = new Set<string>();
  for (const { tag } of declared) {
    if (seen.has(tag)) throw usage(`--opaque-tag names tag ${tag} twice: give each tag once`);
    seen.add(tag);
  }
  return declared;
}

/**
 * A token is sent as `Authorization: Bearer T`, which cannot carry whitespace; an empty or blank
 * one would stand for "no token", which for `--token` means open ID endpoints: both stop the start.
 */
function checkedToken(token: string, flag: string): string {
  if (token.trim() === '') throw usage(`${flag} is empty or blank: give a token, or leave ${flag} out`);
  if (/\s/.test(token))
    throw usage(`${flag} holds whitespace, which Authorization: Bearer cannot carry: use a token without it`);
  return token;
}

function tlsOf({ tlsCert, tlsKey }: ServeSettings): { cert: string; key: string } | undefined {
  if (tlsCert === undefined && tlsKey === undefined) return undefined;
  if (tlsCert === undefined || tlsKey === undefined) throw usage('--tls-cert and --tls-key go together');
  return { cert: tlsCert, key: tlsKey };
}

/** `--zk` / `--etcd` and their companions; undefined: worker IDs from the data dir's file. */
function coordinatorOf(settings: ServeSettings): CoordinatorConfig | undefined {
  const config = coordinatorConfig(settings);
  // Leaf mode's worker ID belongs to ip:port, which every worker of --workers shares.
  if (config && !config.lease && settings.workers > 1)
    throw usage(
      `--workers with ${flagOfKind(config.kind)} needs --worker-lease: in Leaf mode ip:port is the worker ID, one per node`,
    );
  return config;
}

/**
 * Flags, then `FROND_*` variables, then `--config FILE` (JSON), then `--leaf-config
 * leaf.properties`, then the defaults. Unknown flags, variables and keys stop the start; what
 * frond reads differently from Leaf, or not at all, goes into `warnings` (logged at start).
 */
export function parseServeArgs(
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
  now = Date.now(),
  warnings: string[] = [],
): ServeSettings {
  // The files' paths come from flags or the environment, so those are read first.
  const { raw } = parseRaw(SERVE, args, { env, rejectUnknownEnv: true });
  const files: RawValues[] = [];
  const config = raw.values.config;
  if (typeof config === 'string') files.push(readConfigFile(config, SERVE_OPTIONS));
  const leaf = raw.values.leafConfig;
  if (typeof leaf === 'string') {
    const read = readLeafProperties(leaf, SERVE_OPTIONS);
    files.push(read);
    warnings.push(...read.warnings);
  }
  const { settings, sources } = parseCommand(SERVE, args, { env, files, rejectUnknownEnv: true, now });
  return typeof leaf === 'string' ? asLeafDoes(settings, sources, leaf, warnings) : settings;
}

/**
 * With `--leaf-config`, what Leaf would do where frond's defaults differ. Leaf is a Spring Boot
 * server, which listens on every interface unless `server.address` is set
 * (leaf-server/src/main/resources/application.properties sets neither it nor, in Leaf's 1.0.1,
 * the port: Spring Boot's 8080), so the node does too, and says so. A mode Leaf would start only
 * with a ZooKeeper or a database it is not given is refused rather than served from the data dir
 * (Leaf: SnowflakeService.java and SegmentService.java fail their init without them).
 */
function asLeafDoes(
  settings: ServeSettings,
  sources: Record<string, string>,
  path: string,
  warnings: string[],
): ServeSettings {
  const given = (name: string) => sources[name] !== undefined;
  // A worker ID given, or a coordinator to take one from.
  const workerIdFrom = [...COORDINATOR_BACKENDS.map((backend) => backend.option), WORKER_ID];
  if (settings.snowflake && !workerIdFrom.some((entry) => given(entry.name)))
    throw new FrondError(
      'INVALID_CONFIG',
      `${path}: snowflake mode is on (${given('snowflake') ? 'leaf.snowflake.enable=true' : "leaf.snowflake.enable absent: Leaf's default is on"}) but leaf.snowflake.zk.address is empty, so Leaf would not start; set it, set leaf.snowflake.enable=false, or give ${inWords(workerIdFrom.map((entry) => `--${entry.flag}`))}`,
    );
  if (settings.segment && !given('store'))
    throw new FrondError(
      'INVALID_CONFIG',
      `${path}: segment mode is on (${given('segment') ? 'leaf.segment.enable=true' : "leaf.segment.enable absent: Leaf's default is on"}) but leaf.jdbc.url is empty, so Leaf would not start; set it, set leaf.segment.enable=false, or give --store`,
    );
  if (given('host')) return settings;
  warnings.push(
    `listening on every interface (0.0.0.0) as Leaf does, because --leaf-config is given and no --host or server.address: give --host 127.0.0.1 for loopback only`,
  );
  return { ...settings, host: '0.0.0.0' };
}

/** Runs until SIGTERM or SIGINT, then shuts down gracefully; resolves with the exit code. */
export async function serveCommand(args: string[]): Promise<number> {
  const warnings: string[] = [];
  const settings = parseServeArgs(args, process.env, Date.now(), warnings);
  const config = serveConfig(settings);
  const logger = createPinoLogger(config.logLevel);
  // Once per node, by the primary of --workers.
  if (!cluster.isWorker) for (const message of warnings) logger.log('warn', 'config.warning', { message });
  // `--workers N`: this process becomes the primary of N forked copies of itself (src/server/cluster/cluster.ts).
  if (cluster.isWorker) return runWorker(config, logger, serveUntilSignal);
  if (settings.workers > 1) return runPrimary(config, settings.workers, logger);
  return serveUntilSignal(config, logger);
}

async function serveUntilSignal(config: ServeConfig, logger: Logger): Promise<number> {
  // The handlers go in before the start, so a SIGTERM that comes right after the `listening` line
  // (or while the start waits for the clock) is a graceful stop, never the default kill.
  let received: string | undefined;
  let onSignal: (signal: string) => void = (signal) => {
    received ??= signal;
  };
  const handle = (signal: string) => () => onSignal(signal);
  process.once('SIGTERM', handle('SIGTERM'));
  process.once('SIGINT', handle('SIGINT'));
  const running = await startServer(config, logger, systemClock);
  return new Promise((resolve) => {
    const stop = (signal: string) => {
      logger.log('info', 'shutdown', { signal });
      running.close().then(
        () => resolve(0),
        (error: unknown) => {
          logger.log('error', 'shutdown_failed', { error: describeError(error) });
          resolve(1);
        },
      );
    };
    onSignal = (signal) => {
      onSignal = () => {};
      stop(signal);
    };
    if (received !== undefined) onSignal(received);
  });
}
