import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';
import { FrondError } from '../../core/errors.js';
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
  /** Hands every request to `handler` from now on; those that came before wait for it. */
  serve(handler: Handler): void;
}

/**
 * Listens over HTTP, or HTTPS with `tls`, on the configured host and port, holding at most
 * `--max-connections`; warns when that leaves too few file descriptors for the store. Called
 * before the node claims anything (its data dir, a worker ID), so a port it cannot have stops the
 * start before a file is written: requests that arrive meanwhile wait until `serve` is called (or
 * the start fails and the server closes).
 */
export async function listen(
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
  const waiting: [IncomingMessage, ServerResponse][] = [];
  const hold: Handler = (req, res) => waiting.push([req, res]);
  const server = createHttpServer(hold, {
    tls,
    requestTimeoutMs: config.requestTimeoutMs,
    maxConnections,
    logger,
  });
  await new Promise<void>((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) => reject(listenFailure(error, config));
    server.once('error', failed);
    server.listen(config.port, config.host, () => {
      server.off('error', failed);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const url = `${tls ? 'https' : 'http'}://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  const serve = (handler: Handler) => {
    server.off('request', hold).on('request', handler);
    for (const [req, res] of waiting.splice(0)) handler(req, res);
  };
  return { server, url, maxConnections, descriptorLimit: limit, serve };
}

/**
 * `--workers`' primary holds no server on the port its workers share (node:cluster binds it for
 * them), so it takes the port for a moment and lets it go: a port in use stops the node before it
 * locks its data dir or forks a worker. Port 0 (any free port) needs no check.
 */
export async function assertPortFree(config: Pick<ListenConfig, 'host' | 'port'>): Promise<void> {
  if (config.port === 0) return;
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', (error: NodeJS.ErrnoException) => reject(listenFailure(error, config)));
    probe.listen(config.port, config.host, () => resolve());
  });
  await new Promise((resolve) => probe.close(resolve));
}

/** Why the node cannot listen, in one line naming the setting to change. */
function listenFailure(
  error: NodeJS.ErrnoException,
  config: Pick<ListenConfig, 'host' | 'port'>,
): FrondError {
  const { host, port } = config;
  const at = `port ${port} on ${host}`;
  const message = (() => {
    switch (error.code) {
      case 'EADDRINUSE':
        return `${at} is in use (--port)`;
      case 'EACCES':
      case 'EPERM':
        return `${at} needs a privilege this user lacks (--port): use a port from 1024 up`;
      case 'EADDRNOTAVAIL':
        return `--host ${host} is not an address of this machine (EADDRNOTAVAIL): give one of its addresses, 127.0.0.1 or 0.0.0.0`;
      case 'ENOTFOUND':
      case 'EAI_AGAIN':
      case 'EAI_FAIL':
        return `--host ${host} does not resolve (${error.code}): give an address, or a name this machine resolves`;
      default:
        return `cannot listen on ${at} (${error.message}) (--host, --port)`;
    }
  })();
  return new FrondError('INVALID_CONFIG', message, { cause: error });
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
