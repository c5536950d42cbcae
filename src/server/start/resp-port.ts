import type { Logger } from '../../core/logger.js';
import type { SnowflakeService } from '../../core/snowflake-service.js';
import { PORT_CONNECTIONS_CAP } from '../http/http-server.js';
import type { RateLimiter } from '../http/rate-limit.js';
import { TagIssuer } from '../opaque/tag-issuer.js';
import { DEFAULT_RESP_MAX_IN_FLIGHT, openRespServer, type RespServer } from '../resp/resp-server.js';
import type { SegmentMode } from './segment-mode.js';
import type { ServeConfig } from './serve-config.js';

/**
 * `--resp-port`: the Redis protocol beside HTTP, taken as early as the HTTP port (a port in use
 * stops the start before the data dir is locked or a worker ID claimed); undefined when off.
 */
export async function listenResp(
  config: ServeConfig,
  tls: { cert: Buffer; key: Buffer } | undefined,
  logger: Logger,
): Promise<RespServer | undefined> {
  if (config.respPort === 0) return undefined;
  const resp = await openRespServer(
    {
      host: config.host,
      port: config.respPort,
      tls,
      // startServer settles the cap from the descriptor budget (connection-budget.ts).
      maxConnections: config.respMaxConnections ?? PORT_CONNECTIONS_CAP,
      idleTimeoutMs: config.respIdleTimeoutMs,
      maxInFlight: DEFAULT_RESP_MAX_IN_FLIGHT,
      shutdownTimeoutMs: config.shutdownTimeoutMs,
    },
    logger,
  );
  logger.log('info', 'resp.listening', { url: resp.url });
  return resp;
}

/**
 * Serves RESP from the node's own allocator (a `TagIssuer` on it, plain or opaque as HTTP decides)
 * and generator, once the modes are open. Answers the port's close for `startServer` to push after
 * the modes' cleanups, so it runs first: replies in flight are written before the allocator and
 * the generator stop.
 */
export function serveResp(
  resp: RespServer,
  config: ServeConfig,
  segment: SegmentMode | undefined,
  snowflake: SnowflakeService | undefined,
  logger: Logger,
  rateLimiter: RateLimiter | undefined,
): () => Promise<void> {
  resp.serve({
    rateLimiter,
    issuer: segment && new TagIssuer(segment.allocator, segment.opaque),
    snowflake,
    layout: config.layout,
    tokens: config.tokens,
    logger,
  });
  return () => resp.close();
}
