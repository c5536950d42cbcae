import { type AddressInfo, createServer as createNetServer, type Socket } from 'node:net';
import {
  type ChannelOptions,
  logVerbosity,
  Server,
  ServerCredentials,
  setLogger,
  setLogVerbosity,
} from '@grpc/grpc-js';
import { FrondError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { onDropsThrottled } from '../http/connection-drops.js';
import { PORT_CONNECTIONS_CAP, TLS_CIPHERS } from '../http/http-server.js';
import { bindHost } from '../start/listen.js';
import type { ListenConfig } from '../start/serve-config.js';
import { GrpcHealth } from './grpc-health.js';
import { createIdService, type GrpcIdDeps } from './grpc-ids.js';
import { loadServices } from './grpc-proto.js';

/**
 * A request is a tag (128 characters, up to 512 bytes of UTF-8) and a count: a few hundred bytes.
 * 64 KiB leaves room for any metadata-free request and refuses a large one before it is parsed.
 */
export const MAX_RECEIVE_BYTES = 64 * 1024;

/**
 * Server settings. Streams per connection: 1000 unary calls in flight on one channel is far above
 * what a client needs (the bench's load client holds 128), and bounds the memory one connection
 * takes. Keepalive: the server pings a silent connection after 2 minutes and drops it when the ping
 * goes 20 s unanswered (a client that vanished without a FIN); a connection with no call for
 * 10 minutes is closed (clients reconnect on their next call).
 */
export const GRPC_SERVER_OPTIONS: ChannelOptions = {
  'grpc.max_receive_message_length': MAX_RECEIVE_BYTES,
  'grpc.max_concurrent_streams': 1000,
  'grpc.keepalive_time_ms': 120_000,
  'grpc.keepalive_timeout_ms': 20_000,
  'grpc.max_connection_idle_ms': 600_000,
  // Channelz's per-call bookkeeping is for a debugging service frond does not serve.
  'grpc.enable_channelz': 0,
};

/** What the gRPC port serves once the modes are open. */
export interface GrpcServeDeps extends GrpcIdDeps {
  readiness(): { ready: boolean };
}

/** The gRPC port once it listens. */
export interface GrpcListening {
  /** `host:port` as a client dials it: `127.0.0.1:50051`, `[::]:50051`. */
  address: string;
  port: number;
  /** Answers every call from now on; those that came before wait for it. */
  serve(deps: GrpcServeDeps): void;
  /** Stops taking calls, lets those in flight finish, and cuts what is left after `timeoutMs`. */
  close(timeoutMs: number): Promise<void>;
}

/**
 * `--grpc-port`, over TLS with the node's certificate when `tls` is given (the same pair as
 * HTTPS). Taken at the start before the node claims anything, as the HTTP port is: calls that
 * arrive before `serve` wait. Undefined when `--grpc-port` is 0 (off).
 *
 * The port is a plain `net.Server` of frond's whose connections go to grpc-js through a connection
 * injector (TLS, if any, is grpc-js's HTTP/2 server's, on the injected socket): grpc-js's own
 * `bindAsync` has no connection limit, and `net.Server.maxConnections` is what HTTP and RESP use
 * for theirs (`--grpc-max-connections`; a connection past it is closed as it arrives).
 */
export async function listenGrpc(
  config: Pick<ListenConfig, 'grpcPort' | 'grpcMaxConnections' | 'host'>,
  tls: { cert: Buffer; key: Buffer } | undefined,
  logger: Logger,
): Promise<GrpcListening | undefined> {
  if (config.grpcPort === 0) return undefined;
  routeLibraryLog(logger);
  const services = loadServices();
  const server = new Server(GRPC_SERVER_OPTIONS);
  let resolve: (deps: GrpcServeDeps) => void = () => {};
  let reject: (error: Error) => void = () => {};
  const deps = new Promise<GrpcServeDeps>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  const health = new GrpcHealth();
  server.addService(services.ids, createIdService(deps, logger));
  server.addService(services.health, health.implementation());
  const credentials = tls ? new NodeTlsCredentials(tls) : ServerCredentials.createInsecure();
  const injector = server.createConnectionInjector(credentials);
  // Every connection the port holds, so that a shutdown can cut those grpc-js does not: with
  // channelz off its forceShutdown destroys no session, and a socket still in its TLS handshake is
  // no session at all (one silent connection kept a SIGTERMed node up for good, or 120 s with TLS).
  const sockets = new Set<Socket>();
  const port = createNetServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    injector.injectConnection(socket);
  });
  // startServer settles the cap from the descriptor budget (connection-budget.ts).
  const maxConnections = config.grpcMaxConnections ?? PORT_CONNECTIONS_CAP;
  port.maxConnections = maxConnections;
  onDropsThrottled(port, (refused) =>
    logger.log('warn', 'grpc.connections_full', {
      maxConnections,
      refused,
      message: `${refused === 1 ? 'a gRPC connection was' : `${refused} gRPC connections were`} refused: ${maxConnections} are open (--grpc-max-connections)`,
    }),
  );
  const bound = await bindHost(port, { host: config.host, port: config.grpcPort }, logger).catch(
    (caught: unknown) => {
      // listen.ts names --port; this port is --grpc-port.
      if (caught instanceof Error) caught.message = caught.message.replace(/--port\b/g, '--grpc-port');
      throw caught;
    },
  );
  const host = bound.includes(':') ? `[${bound}]` : bound;
  const { port: number } = port.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    address: `${host}:${number}`,
    port: number,
    serve(ready) {
      health.serve(() => ready.readiness());
      resolve(ready);
    },
    close(timeoutMs) {
      closing ??= new Promise<void>((done) => {
        reject(new FrondError('SHUTTING_DOWN', 'the node is shutting down'));
        health.close();
        // No new connection; those open finish their calls (grpc-js sends them GOAWAY) within timeoutMs.
        port.close();
        const cut = () => {
          for (const socket of sockets) socket.destroy();
        };
        const timer = setTimeout(() => {
          server.forceShutdown();
          cut();
        }, timeoutMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          // The sessions are closed; what is left is connections that never became one.
          cut();
          done();
        });
      });
      return closing;
    },
  };
}

/**
 * The node's certificate with HTTPS's TLS settings (TLS 1.2 and up, forward-secret AEAD suites
 * only: `http/http-server.ts`). grpc-js's own `createSsl` would take Node's default suites, CBC
 * ones among them, which the HTTPS port refuses.
 */
class NodeTlsCredentials extends ServerCredentials {
  constructor(tls: { cert: Buffer; key: Buffer }) {
    super(
      { minVersion: 'TLSv1.2', ciphers: TLS_CIPHERS, requestCert: false },
      { cert: tls.cert, key: tls.key },
    );
  }

  _equals(other: ServerCredentials): boolean {
    return other === this;
  }
}

/**
 * grpc-js writes its own errors to stderr (a port in use is also "E No address added…" there),
 * which would break the one-line error of a failed start and the JSON log: they go to the node's
 * log instead, as warnings (what failed also reaches the caller as a status or a start error).
 */
function routeLibraryLog(logger: Logger): void {
  const log = (...args: unknown[]) =>
    logger.log('warn', 'grpc.library', { message: args.map(String).join(' ') });
  setLogger({ error: log, info: () => {}, debug: () => {} });
  setLogVerbosity(logVerbosity.ERROR);
}
