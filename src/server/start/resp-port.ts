import type { Logger } from '../../core/logger.js';
import type { SnowflakeService } from '../../core/snowflake-service.js';
import { TagIssuer } from '../opaque/tag-issuer.js';
import { DEFAULT_RESP_MAX_IN_FLIGHT, openRespServer } from '../resp/resp-server.js';
import type { Cleanups } from './cleanups.js';
import type { SegmentMode } from './segment-mode.js';
import type { ServeConfig } from './serve-config.js';

/**
 * `--resp-port`: the Redis protocol beside HTTP, issuing through the node's own allocator (a
 * `TagIssuer` on it, plain or opaque as HTTP decides) and generator. Its close goes into
 * `cleanups`, after the modes it issues from, so it closes first: replies in flight are written
 * before the allocator and the generator stop.
 */
export async function openRespPort(
  config: ServeConfig,
  tls: { cert: Buffer; key: Buffer } | undefined,
  segment: SegmentMode | undefined,
  snowflake: SnowflakeService | undefined,
  logger: Logger,
  cleanups: Cleanups,
): Promise<void> {
  if (config.respPort === 0) return;
  const resp = await openRespServer(
    {
      host: config.host,
      port: config.respPort,
      tls,
      maxConnections: config.respMaxConnections,
      idleTimeoutMs: config.respIdleTimeoutMs,
      maxInFlight: DEFAULT_RESP_MAX_IN_FLIGHT,
      shutdownTimeoutMs: config.shutdownTimeoutMs,
    },
    {
      issuer: segment && new TagIssuer(segment.allocator, segment.opaque),
      snowflake,
      layout: config.layout,
      tokens: config.tokens,
      logger,
    },
    logger,
  );
  cleanups.push(() => resp.close());
  logger.log('info', 'resp.listening', { url: resp.url });
}
