import cluster from 'node:cluster';
import { systemClock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { runPrimary, runWorker } from '../server/cluster.js';
import { createPinoLogger } from '../server/pino-logger.js';
import { type ServeConfig, startServer } from '../server/serve.js';
import { type CoordinatorConfig, coordinatorConfig } from '../worker-ids/worker-id-registry.js';
import { readConfigFile, readLeafProperties } from './config-sources.js';
import { SERVE, SERVE_OPTIONS, type ServeSettings } from './option-table.js';
import { parseCommand, parseRaw, type RawValues, usage } from './options.js';
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
  };
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
      '--workers with --zk needs --worker-lease: in Leaf mode ip:port is the worker ID, one per node',
    );
  return config;
}

/**
 * Flags, then `FROND_*` variables, then `--config FILE` (JSON), then `--leaf-config
 * leaf.properties`, then the defaults. Unknown flags, variables and keys stop the start.
 */
export function parseServeArgs(
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
  now = Date.now(),
): ServeSettings {
  // The files' paths come from flags or the environment, so those are read first.
  const { raw } = parseRaw(SERVE, args, { env, rejectUnknownEnv: true });
  const files: RawValues[] = [];
  const config = raw.values.config;
  if (typeof config === 'string') files.push(readConfigFile(config, SERVE_OPTIONS));
  const leaf = raw.values.leafConfig;
  if (typeof leaf === 'string') files.push(readLeafProperties(leaf, SERVE_OPTIONS));
  return parseCommand(SERVE, args, { env, files, rejectUnknownEnv: true, now }).settings;
}

/** Runs until SIGTERM or SIGINT, then shuts down gracefully; resolves with the exit code. */
export async function serveCommand(args: string[]): Promise<number> {
  const settings = parseServeArgs(args);
  const config = serveConfig(settings);
  const logger = createPinoLogger(config.logLevel);
  // `--workers N`: this process becomes the primary of N forked copies of itself (src/server/cluster.ts).
  if (cluster.isWorker) return runWorker(config, logger, serveUntilSignal);
  if (settings.workers > 1) return runPrimary(config, settings.workers, logger);
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
