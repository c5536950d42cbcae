import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../../core/logger.js';
import type { Handler } from '../http/app.js';
import {
  createHttpServer,
  defaultMaxConnections,
  descriptorLimit,
  RESERVED_DESCRIPTORS,
} from '../http/http-server.js';
import type { ListenConfig } from './serve-config.js';

/** The node's HTTP server once it listens, with the connection cap it took. */
export interface Listening {
  server: Server;
  url: string;
  maxConnections: number;
  /** `ulimit -n`; undefined where it cannot be read. */
  descriptorLimit: number | undefined;
}

/**
 * Serves `handler` over HTTP, or HTTPS with `tls`, on the configured host and port, holding at most
 * `--max-connections`; warns when that leaves too few file descriptors for the store.
 */
export async function listen(
  handler: Handler,
  config: ListenConfig,
  tls: { cert: Buffer; key: Buffer } | undefined,
  logger: Logger,
): Promise<Listening> {
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
  return { server, url, maxConnections, descriptorLimit: limit };
}

/** Stops accepting, lets requests in flight finish, and cuts what is left after `timeoutMs`. */
export function closeHttp(server: Server, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => server.closeAllConnections(), timeoutMs);
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    server.closeIdleConnections();
  });
}
