import cluster from 'node:cluster';
import { systemClock } from '../core/clock.js';
import { describeError, FrondError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { runPrimary, runWorker } from '../server/cluster/cluster.js';
import { EVERY_INTERFACE } from '../server/start/listen.js';
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
  const { raw } = parseRaw(SERVE, args, { env, rejectUnknownEnv: true, spring: 'skip' });
  const files: RawValues[] = [];
  const config = raw.values.config;
  if (typeof config === 'string') files.push(readConfigFile(config, SERVE_OPTIONS));
  const leaf = raw.values.leafConfig;
  if (typeof leaf === 'string') {
    const read = readLeafProperties(leaf, SERVE_OPTIONS);
    files.push(read);
    warnings.push(...read.warnings);
  }
  // Spring's `--server.port=N` and `SERVER_PORT` are how Leaf is run: read with Leaf's config.
  const spring = typeof leaf === 'string' ? 'read' : 'refuse';
  const { settings, sources } = parseCommand(SERVE, args, {
    env,
    files,
    rejectUnknownEnv: true,
    now,
    spring,
  });
  if (spring === 'refuse') warnings.push(...springEnvUnread(sources, env));
  // Snowflake mode alone needs no store: one named anyway (FROND_STORE kept for the tag commands,
  // a leaf.properties with leaf.jdbc.url and leaf.segment.enable=false) is checked, never opened.
  if (!settings.segment && sources.store !== undefined)
    warnings.push(
      `${sources.store} is not used: segment mode is off (${sources.segment ?? '--no-segment'}), and snowflake mode needs no store`,
    );
  return typeof leaf === 'string' ? asLeafDoes(settings, sources, leaf, warnings) : settings;
}

/**
 * `SERVER_PORT` (or `SERVER_ADDRESS`) set while nothing else sets the port: a Leaf user's variable
 * that frond reads only with `--leaf-config`, said at start rather than silently passed over.
 */
function springEnvUnread(sources: Record<string, string>, env: NodeJS.ProcessEnv): string[] {
  return SERVE_OPTIONS.filter(
    (entry) =>
      entry.springEnv !== undefined &&
      (env[entry.springEnv] ?? '') !== '' &&
      sources[entry.name] === undefined,
  ).map(
    (entry) =>
      `${entry.springEnv}=${env[entry.springEnv as string]} is Spring's, read only with --leaf-config: it is not used (give --${entry.flag} or ${entry.env})`,
  );
}

/**
 * With `--leaf-config`, what Leaf would do where frond's defaults differ. Leaf is a Spring Boot
 * server, which listens on every interface, IPv6 and IPv4, unless `server.address` is set
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
  // Leaf starts with both off and answers 0 to every ID request (leaf-server/.../service/
  // SegmentService.java and SnowflakeService.java fall back to ZeroIDGen, leaf-core/.../common/
  // ZeroIDGen.java: `new Result(0, Status.SUCCESS)`), as its own sample leaf.properties does. A
  // client would store 0 as a key, so frond refuses, naming the file's two keys.
  const fromFile = (name: string) => sources[name]?.startsWith(`${path}: `) === true;
  if (!settings.segment && !settings.snowflake && fromFile('segment') && fromFile('snowflake'))
    throw new FrondError(
      'INVALID_CONFIG',
      `${path}: leaf.segment.enable and leaf.snowflake.enable are both off, which leaves nothing to serve (Leaf would start and answer 0 to every ID request); set one of them to true`,
    );
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
  // Java binds a wildcard socket for IPv6 and IPv4 at once; `::` does the same (listen.ts).
  warnings.push(
    `listening on every interface, IPv6 and IPv4 (${EVERY_INTERFACE}), as Leaf does, because --leaf-config is given and no --host or server.address: give --host 127.0.0.1 for loopback only`,
  );
  return { ...settings, host: EVERY_INTERFACE };
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
