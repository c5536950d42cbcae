import type { Server } from 'node:http';
import { type Clock, systemClock } from '../../core/clock.js';
import type { Logger } from '../../core/logger.js';
import { type GrpcListening, listenGrpc } from '../grpc/grpc-server.js';
import { createApp } from '../http/app.js';
import { descriptorLimit } from '../http/http-server.js';
import { RateLimiter } from '../http/rate-limit.js';
import { TagIssuer } from '../opaque/tag-issuer.js';
import { type Cleanups, runCleanups } from './cleanups.js';
import { withConnectionCaps } from './connection-budget.js';
import { lockDataDir } from './data-dir-lock.js';
import { closeHttp, listen } from './listen.js';
import { openOpsSurface, startOpsSurface } from './ops-surface.js';
import { listenResp, serveResp } from './resp-port.js';
import { openSegmentMode } from './segment-mode.js';
import type { ListenConfig, ServeConfig } from './serve-config.js';
import { openSnowflakeMode } from './snowflake-mode.js';
import { readStartFiles } from './start-files.js';

export interface RunningServer {
  url: string;
  server: Server;
  close(): Promise<void>;
}

/**
 * Composes the node: HTTP, then the ops surface, segment mode and snowflake mode, each closed again
 * if a later one fails; nothing here is on the path of a request. The port comes first: a start
 * that cannot have it (another process listens there) fails before it locks the data dir, claims a
 * worker ID or writes a file. Requests that arrive while the modes open wait for them.
 */
export async function startServer(
  given: ServeConfig,
  logger: Logger,
  clock: Clock = systemClock,
): Promise<RunningServer> {
  // Every port's connection cap out of one descriptor budget (connection-budget.ts).
  const config = withConnectionCaps(given, descriptorLimit(), logger);
  // The files the settings name come first: one that cannot be read stops the start before the port.
  const { tls, opaqueSecret } = readStartFiles(config);
  const http = await listen(config, tls, logger);
  const cleanups: Cleanups = [];
  let grpc: GrpcListening | undefined;
  try {
    grpc = await listenGrpc(config, tls, logger);
    // Closed if a later step fails, and again (once: close is idempotent) before the modes at shutdown.
    const resp = await listenResp(config, tls, logger);
    if (resp) cleanups.push(() => resp.close());
    cleanups.push(lockDataDir(config.dataDir));
    const ops = openOpsSurface(config, clock);
    const segment = config.segment
      ? await openSegmentMode({ ...config, opaqueSecret }, clock, logger, ops.metrics, cleanups, {
          node: nodeName(http.url),
        })
      : undefined;
    // Run at the stop after every port stopped taking requests (the RESP server's close and the
    // HTTP and gRPC drain come first) and before the store closes: the unused IDs go back to the
    // table, within --hand-back-timeout-ms. Never throws (SegmentAllocator.handBackAll).
    if (segment) cleanups.push(() => segment.handBack(config.handBackTimeoutMs));
    const snowflake = config.snowflake ? await openSnowflakeMode(config, clock, logger, cleanups) : undefined;
    const opsDeps = startOpsSurface(ops, config, segment, snowflake, cleanups, clock);
    const rateLimiter = config.rateLimit > 0 ? new RateLimiter(config.rateLimit, clock) : undefined;
    if (resp) cleanups.push(serveResp(resp, config, segment, snowflake, logger, rateLimiter));
    http.serve(
      createApp({
        segment: segment?.allocator,
        snowflake,
        opaque: segment?.opaque,
        layout: config.layout,
        logger,
        // The one clock of the node: Leaf error bodies and page caching follow it as IDs do.
        now: () => clock.now(),
        access: config,
        rateLimiter,
        observer: ops.metrics,
        ops: opsDeps,
      }),
    );
    grpc?.serve({
      ...opsDeps,
      issuer: segment && new TagIssuer(segment.allocator, segment.opaque),
      snowflake,
      layout: config.layout,
      access: config,
      rateLimiter,
      logger,
      observer: ops.metrics,
    });
    logger.log('info', 'listening', {
      url: http.url,
      segment: segment?.store.description ?? 'off',
      snowflakeWorkerId: snowflake?.workerId ?? 'off',
      grpc: grpc?.address ?? 'off',
      maxConnections: http.maxConnections,
      descriptorLimit: http.descriptorLimit ?? 'unknown',
    });
    // A `--workers` process: the primary announces the node once every process got here.
    config.cluster?.serving(http.url);
    return {
      url: http.url,
      server: http.server,
      close: closeOnce(http.server, config, cleanups, logger, grpc),
    };
  } catch (error) {
    await grpc?.close(0);
    await runCleanups(cleanups);
    // Requests that waited for the start are cut: the node never served.
    await closeHttp(http.server, 0);
    throw error;
  }
}

/** `http://127.0.0.1:8080` → `127.0.0.1:8080`: the node as frond_gaps names it. */
export function nodeName(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

/**
 * The node's shutdown, run once however often it is asked for: HTTP and gRPC first (calls in flight
 * get `--shutdown-timeout-ms` to finish), then what start-up opened, the last first.
 */
function closeOnce(
  server: Server,
  config: Pick<ListenConfig, 'shutdownTimeoutMs'>,
  cleanups: Cleanups,
  logger: Logger,
  grpc: GrpcListening | undefined,
): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => {
    closing ??= (async () => {
      await Promise.all([closeHttp(server, config.shutdownTimeoutMs), grpc?.close(config.shutdownTimeoutMs)]);
      await runCleanups(cleanups);
      logger.log('info', 'stopped', {});
    })();
    return closing;
  };
}
