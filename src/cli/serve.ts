import cluster from 'node:cluster';
import { systemClock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { assertWorkerId, LEAF_EPOCH, MAX_WORKER_ID } from '../core/snowflake-layout.js';
import { MAX_WORKERS, runPrimary, runWorker } from '../server/cluster.js';
import { createPinoLogger, isLogLevel } from '../server/pino-logger.js';
import { type ServeConfig, startServer } from '../server/serve.js';
import {
  type CoordinatorConfig,
  coordinatorConfig,
  DEFAULT_COORDINATOR_TIMEOUT_MS,
  DEFAULT_LEASE_TTL_MS,
  DEFAULT_MAX_CLOCK_SKEW_MS,
} from '../workers/open-worker-id-source.js';
import { readConfigFile, readLeafProperties } from './config-sources.js';
import {
  booleanOption,
  type DefaultValues,
  integerOption,
  listOption,
  type OptionSpec,
  type ParsedCommand,
  parseCommand,
  stringOption,
  usage,
} from './options.js';
import { dataDirOf, STORE_OPTIONS, storeOf } from './store-options.js';

export const SERVE_OPTIONS: Record<string, OptionSpec> = {
  host: { type: 'string' },
  port: { type: 'string' },
  ...STORE_OPTIONS,
  'worker-id': { type: 'string' },
  zk: { type: 'string' },
  etcd: { type: 'string' },
  name: { type: 'string' },
  advertise: { type: 'string' },
  'advertise-port': { type: 'string' },
  'worker-lease': { type: 'boolean' },
  'worker-lease-ttl-ms': { type: 'string' },
  'coordinator-timeout-ms': { type: 'string' },
  'clock-max-skew-ms': { type: 'string' },
  'no-segment': { type: 'boolean' },
  'no-snowflake': { type: 'boolean' },
  epoch: { type: 'string' },
  'no-random-sequence': { type: 'boolean' },
  'segment-wait-ms': { type: 'string' },
  'tag-refresh-ms': { type: 'string' },
  'max-step': { type: 'string' },
  'clock-tolerance-ms': { type: 'string' },
  'clock-startup-wait-ms': { type: 'string' },
  'shutdown-timeout-ms': { type: 'string' },
  'log-level': { type: 'string' },
  config: { type: 'string' },
  'leaf-config': { type: 'string' },
  token: { type: 'string', multiple: true },
  'admin-token': { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  'rate-limit': { type: 'string' },
  workers: { type: 'string' },
};

const HOUR = 3_600_000;

export function serveConfig(parsed: ParsedCommand, now = Date.now()): ServeConfig {
  const workerIdText = stringOption(parsed, 'worker-id');
  const logLevel = stringOption(parsed, 'log-level') ?? 'info';
  if (!isLogLevel(logLevel))
    throw usage(`--log-level ${JSON.stringify(logLevel)} is invalid: use debug, info, warn or error`);
  const segment = !booleanOption(parsed, 'no-segment');
  const snowflake = !booleanOption(parsed, 'no-snowflake');
  if (!segment && !snowflake) throw usage('--no-segment and --no-snowflake together leave nothing to serve');
  return {
    host: stringOption(parsed, 'host') ?? '127.0.0.1',
    port: integerOption(parsed, 'port', 8080, 0, 65_535),
    store: storeOf(parsed),
    dataDir: dataDirOf(parsed),
    workerId:
      workerIdText === undefined
        ? undefined
        : assertWorkerId(integerOption(parsed, 'worker-id', 0, 0, MAX_WORKER_ID)),
    segment,
    snowflake,
    // Without snowflake mode the worker-ID flags mean nothing (a leaf.properties may still name ZooKeeper).
    coordinator: snowflake ? coordinatorOf(parsed) : undefined,
    epoch: integerOption(parsed, 'epoch', LEAF_EPOCH, 0, now),
    randomSequence: !booleanOption(parsed, 'no-random-sequence'),
    segmentWaitMs: integerOption(parsed, 'segment-wait-ms', 3_000, 1, 10 * 60_000),
    tagRefreshMs: integerOption(parsed, 'tag-refresh-ms', 60_000, 100, 24 * HOUR),
    maxStep: integerOption(parsed, 'max-step', 1_000_000, 1, 2_147_483_647),
    clockToleranceMs: integerOption(parsed, 'clock-tolerance-ms', 5, 0, 1_000),
    clockStartupWaitMs: integerOption(parsed, 'clock-startup-wait-ms', 5_000, 0, HOUR),
    shutdownTimeoutMs: integerOption(parsed, 'shutdown-timeout-ms', 10_000, 0, 10 * 60_000),
    logLevel,
    tokens: listOption(parsed, 'token'),
    adminToken: stringOption(parsed, 'admin-token'),
    tls: tlsOf(parsed),
    rateLimit: integerOption(parsed, 'rate-limit', 0, 0, 10_000_000),
  };
}

function tlsOf(parsed: ParsedCommand): { cert: string; key: string } | undefined {
  const cert = stringOption(parsed, 'tls-cert');
  const key = stringOption(parsed, 'tls-key');
  if (cert === undefined && key === undefined) return undefined;
  if (cert === undefined || key === undefined) throw usage('--tls-cert and --tls-key go together');
  return { cert, key };
}

/** `--zk` / `--etcd` and their companions; undefined: worker IDs from the data dir's file. */
function coordinatorOf(parsed: ParsedCommand): CoordinatorConfig | undefined {
  const advertisePort = stringOption(parsed, 'advertise-port');
  const config = coordinatorConfig({
    zk: stringOption(parsed, 'zk'),
    etcd: stringOption(parsed, 'etcd'),
    name: stringOption(parsed, 'name'),
    advertise: stringOption(parsed, 'advertise'),
    advertisePort:
      advertisePort === undefined ? undefined : integerOption(parsed, 'advertise-port', 0, 1, 65_535),
    lease: booleanOption(parsed, 'worker-lease'),
    // ZooKeeper's floor is 2 ticks (4 s with its default tickTime, 1 s in scripts/services.sh); etcd's is 2 s.
    leaseTtlMs: integerOption(parsed, 'worker-lease-ttl-ms', DEFAULT_LEASE_TTL_MS, 1_000, 10 * 60_000),
    timeoutMs: integerOption(
      parsed,
      'coordinator-timeout-ms',
      DEFAULT_COORDINATOR_TIMEOUT_MS,
      100,
      10 * 60_000,
    ),
    maxClockSkewMs: integerOption(parsed, 'clock-max-skew-ms', DEFAULT_MAX_CLOCK_SKEW_MS, 0, HOUR),
    workerId: stringOption(parsed, 'worker-id') === undefined ? undefined : 0,
    httpPort: integerOption(parsed, 'port', 8080, 0, 65_535),
  });
  // Leaf mode's worker ID belongs to ip:port, which every worker of --workers shares.
  if (config && !config.lease && integerOption(parsed, 'workers', 1, 1, MAX_WORKERS) > 1)
    throw usage(
      '--workers with --zk needs --worker-lease: in Leaf mode ip:port is the worker ID, one per node',
    );
  return config;
}

/**
 * Flags, then `FROND_*` variables, then `--config FILE` (JSON), then `--leaf-config
 * leaf.properties`, then the defaults. Unknown flags, variables and keys stop the start.
 */
export function parseServeArgs(args: string[], env: NodeJS.ProcessEnv = process.env): ParsedCommand {
  const first = parseCommand('serve', args, SERVE_OPTIONS, [], env, [], true);
  const files: DefaultValues[] = [];
  const config = stringOption(first, 'config');
  if (config !== undefined) files.push(readConfigFile(config, SERVE_OPTIONS));
  const leaf = stringOption(first, 'leaf-config');
  if (leaf !== undefined) files.push(readLeafProperties(leaf, SERVE_OPTIONS));
  return files.length === 0 ? first : parseCommand('serve', args, SERVE_OPTIONS, [], env, files, true);
}

/** Runs until SIGTERM or SIGINT, then shuts down gracefully; resolves with the exit code. */
export async function serveCommand(args: string[]): Promise<number> {
  const parsed = parseServeArgs(args);
  const config = serveConfig(parsed);
  const logger = createPinoLogger(config.logLevel);
  // `--workers N`: this process becomes the primary of N forked copies of itself (src/server/cluster.ts).
  if (cluster.isWorker) return runWorker(config, logger, serveUntilSignal);
  const workers = integerOption(parsed, 'workers', 1, 1, MAX_WORKERS);
  if (workers > 1) return runPrimary(config, workers, logger);
  return serveUntilSignal(config, logger);
}

async function serveUntilSignal(config: ServeConfig, logger: Logger): Promise<number> {
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
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
}
