import cluster from 'node:cluster';
import { systemClock } from '../core/clock.js';
import { describeError, FrondError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { runPrimary, runWorker } from '../server/cluster/cluster.js';
import { createLogger } from '../server/start/pino-logger.js';
import type { ServeConfig } from '../server/start/serve-config.js';
import { WORKER_ID, WORKER_ID_ORDINAL } from '../server/start/serve-settings.js';
import { startServer } from '../server/start/start-server.js';
import { COORDINATOR_BACKENDS } from '../worker-ids/worker-id-registry.js';
import { readConfigFile, readLeafProperties } from './config-sources.js';
import { SERVE, SERVE_OPTIONS, type ServeSettings } from './option-table.js';
import { inWords, parseCommand, parseRaw, type RawValues } from './options.js';
import { serveConfig } from './serve-config.js';

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
  const workerIdFrom = [
    ...COORDINATOR_BACKENDS.map((backend) => backend.option),
    WORKER_ID,
    WORKER_ID_ORDINAL,
  ];
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
  const logger = createLogger(config.logLevel, config.logFormat);
  // Once per node, by the primary of --workers.
  if (!cluster.isWorker) for (const message of warnings) logger.log('warn', 'config.warning', { message });
  // `--workers N`: this process becomes the primary of N forked copies of itself (src/server/cluster/cluster.ts).
  if (cluster.isWorker) return runWorker(config, logger, serveUntilSignal);
  if (config.workers > 1) return runPrimary(config, config.workers, logger);
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
