import type { Logger } from '../../core/logger.js';
import { defaultMaxConnections, PORT_CONNECTIONS_CAP, RESERVED_DESCRIPTORS } from '../http/http-server.js';
import type { ServeConfig } from './serve-config.js';

/** The fewest a default gRPC or RESP cap holds, however low the descriptor limit. */
const MIN_PORT_CONNECTIONS = 16;

/** What the connections share where the descriptor limit is unknown or unlimited (HTTP's default there). */
const UNKNOWN_LIMIT_BUDGET = 10_000;

export interface ConnectionCaps {
  http: number;
  /** undefined: the port is off. */
  grpc: number | undefined;
  resp: number | undefined;
}

/**
 * Every port's connection cap out of one descriptor budget (`ulimit -n` less RESERVED_DESCRIPTORS).
 * HTTP's cap alone used to take the whole budget and gRPC's and RESP's 10,000 each came on top: with
 * `ulimit -n 256`, 400 silent gRPC connections took every descriptor and `/readyz` stopped
 * answering. A port on without a cap given gets a quarter of the budget (at most 10,000); HTTP
 * without a cap given gets what the others leave. Caps given are kept as they are.
 */
export function connectionCaps(
  config: Pick<
    ServeConfig,
    'maxConnections' | 'grpcPort' | 'grpcMaxConnections' | 'respPort' | 'respMaxConnections'
  >,
  limit: number | undefined,
): ConnectionCaps {
  // (undefined given to defaultMaxConnections would read the limit itself: no limit is its 10,000.)
  const budget = limit === undefined ? UNKNOWN_LIMIT_BUDGET : defaultMaxConnections(limit);
  const share = Math.max(MIN_PORT_CONNECTIONS, Math.min(PORT_CONNECTIONS_CAP, Math.floor(budget / 4)));
  const grpc = config.grpcPort === 0 ? undefined : (config.grpcMaxConnections ?? share);
  const resp = config.respPort === 0 ? undefined : (config.respMaxConnections ?? share);
  const http = config.maxConnections ?? Math.max(MIN_PORT_CONNECTIONS, budget - (grpc ?? 0) - (resp ?? 0));
  return { http, grpc, resp };
}

/** The config with every cap settled; warns once when the caps together pass the descriptor limit. */
export function withConnectionCaps(
  config: ServeConfig,
  limit: number | undefined,
  logger: Logger,
): ServeConfig {
  const caps = connectionCaps(config, limit);
  const total = caps.http + (caps.grpc ?? 0) + (caps.resp ?? 0);
  // HTTP alone over the limit is listen()'s warning; this one is for the ports together.
  if (
    limit !== undefined &&
    (caps.grpc !== undefined || caps.resp !== undefined) &&
    total > limit - RESERVED_DESCRIPTORS
  )
    logger.log('warn', 'connections.above_limit', {
      maxConnections: caps.http,
      ...(caps.grpc !== undefined && { grpcMaxConnections: caps.grpc }),
      ...(caps.resp !== undefined && { respMaxConnections: caps.resp }),
      descriptorLimit: limit,
      message: `the connection caps add up to ${total}, more than the ${limit - RESERVED_DESCRIPTORS} file descriptors (ulimit -n less ${RESERVED_DESCRIPTORS}) they share: a flood on one port can leave the others, and the store, without any; raise the limit or lower --max-connections, --grpc-max-connections, --resp-max-connections`,
    });
  return {
    ...config,
    maxConnections: caps.http,
    ...(caps.grpc !== undefined && { grpcMaxConnections: caps.grpc }),
    ...(caps.resp !== undefined && { respMaxConnections: caps.resp }),
  };
}
