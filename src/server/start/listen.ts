import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { type AddressInfo, createServer, type Server as NetServer, type Socket } from 'node:net';
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
  trackConnections(server, tls !== undefined);
  const host = await bindHost(server, config, logger);
  const { port } = server.address() as AddressInfo;
  const url = `${tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`;
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
  await bindHost(probe, config, undefined);
  await new Promise((resolve) => probe.close(resolve));
}

/** Every interface, IPv6 and IPv4 alike: `::` with IPv4 mapped in (`ipv6Only` false), as Java binds. */
export const EVERY_INTERFACE = '::';

/**
 * Listens on the configured host and port, and answers the host it took. `::` is dual-stack (IPv4
 * clients arrive as `::ffff:a.b.c.d`); on a machine without IPv6, where `::` cannot be bound, it
 * falls back to `0.0.0.0` and says so, so that "every interface" still means every IPv4 one.
 */
export async function bindHost(
  server: NetServer,
  config: Pick<ListenConfig, 'host' | 'port'>,
  logger: Logger | undefined,
): Promise<string> {
  try {
    await bindOnce(server, config.port, config.host);
    return config.host;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (config.host !== EVERY_INTERFACE || (code !== 'EAFNOSUPPORT' && code !== 'EADDRNOTAVAIL'))
      throw listenFailure(error as NodeJS.ErrnoException, config);
    logger?.log('warn', 'http.no_ipv6', {
      message: `:: cannot be bound here (${code}: this machine has no IPv6), so every IPv4 interface (0.0.0.0) is listened on instead`,
    });
    try {
      await bindOnce(server, config.port, '0.0.0.0');
    } catch (fallback) {
      throw listenFailure(fallback as NodeJS.ErrnoException, { ...config, host: '0.0.0.0' });
    }
    return '0.0.0.0';
  }
}

function bindOnce(server: NetServer, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const failed = (error: Error) => reject(error);
    server.once('error', failed);
    server.listen({ port, host, ipv6Only: false }, () => {
      server.off('error', failed);
      resolve();
    });
  });
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
    // A keep-alive connection busy at the stop would be kept open after its answer, for the
    // client's next request, until the timeout cuts it (6 s with Node 20's defaults): every answer
    // not yet begun says `Connection: close` (Node ends the connection once it is written), and the
    // connections that go idle meanwhile are closed every CLOSE_IDLE_EVERY_MS.
    for (const socket of sockets.get(server) ?? []) closeAfter(socketAnswer(socket));
    server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => closeAfter(res));
    const sweep = setInterval(() => server.closeIdleConnections(), CLOSE_IDLE_EVERY_MS);
    server.close(() => {
      clearTimeout(timer);
      clearInterval(sweep);
      resolve();
    });
    server.closeIdleConnections();
  });
}

/** How often a stopping server closes the keep-alive connections that went idle. */
const CLOSE_IDLE_EVERY_MS = 50;

/** The open connections of each server (`trackConnections`), not their requests: one entry a connection. */
const sockets = new WeakMap<Server, Set<Socket>>();

/** The answer a connection is writing now (Node keeps it on the socket), if any. */
function socketAnswer(socket: Socket): ServerResponse | undefined {
  return (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;
}

function closeAfter(res: ServerResponse | undefined): void {
  if (res !== undefined && !res.headersSent) res.shouldKeepAlive = false;
}

/**
 * Keeps the server's open connections (one Set entry a connection, nothing per request), so that a
 * stop can mark the answers in flight `Connection: close` (`closeHttp`). HTTPS hands requests on the
 * TLS socket, which `secureConnection` gives.
 */
export function trackConnections(server: Server, tls: boolean): void {
  const open = new Set<Socket>();
  sockets.set(server, open);
  server.on(tls ? 'secureConnection' : 'connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
}
