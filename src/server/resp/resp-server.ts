import { type AddressInfo, createServer as createNetServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import type { Logger } from '../../core/logger.js';
import { onDropsThrottled } from '../http/connection-drops.js';
import { TLS_CIPHERS } from '../http/http-server.js';
import type { RateLimiter } from '../http/rate-limit.js';
import { bindHost } from '../start/listen.js';
import {
  createRespCommands,
  errorReply,
  type RespDeps,
  type RespSession,
  runCommand,
} from './resp-commands.js';
import { error } from './resp-encode.js';
import { DEFAULT_RESP_LIMITS, type RespLimits, RespParser, RespProtocolError } from './resp-parser.js';

/** How the RESP port listens and what one connection may hold. */
export interface RespServerOptions {
  host: string;
  port: number;
  tls: { cert: Buffer; key: Buffer } | undefined;
  /** Connections held at once; more are closed as they arrive. */
  maxConnections: number;
  /** A connection that sends nothing for this long is closed (0: never). */
  idleTimeoutMs: number;
  /** Commands of one connection read and not yet answered; past it the socket is not read. */
  maxInFlight: number;
  /** On close, how long replies in flight may take before connections are cut. */
  shutdownTimeoutMs: number;
  limits?: Partial<RespLimits>;
}

/** 1,024 pipelined commands in flight: redis-benchmark's -P 16 × 50 clients is 16 per connection. */
export const DEFAULT_RESP_MAX_IN_FLIGHT = 1024;

export interface RespServer {
  /** `redis://host:port` (`rediss://` with TLS). */
  url: string;
  port: number;
  /**
   * Hands every connection to the commands on `deps` from now on; those that came before wait for
   * it (their bytes unread), as HTTP requests wait for the modes to open.
   */
  serve(deps: RespDeps): void;
  /** Stops accepting, finishes the replies in flight, then ends every connection. */
  close(): Promise<void>;
}

/** One reply slot in order: filled now, or when its promise settles. */
interface Slot {
  reply: string | undefined;
  /** What it counts against `maxInFlight` (`commandWeight`). */
  weight: number;
}

/**
 * What one command counts against `maxInFlight`: 1, and for a batch (`IDS tag N`, `SNOWFLAKE N`)
 * 1 more per 64 IDs, so replies owed to a client that does not read stay near 1,024 × 64 IDs
 * (about 1.3 MB) per connection, not 1,024 batches of 10,000 (200 MB).
 */
export function commandWeight(args: readonly string[]): number {
  const name = args[0] as string;
  const count =
    name.length === 3 && /^ids$/i.test(name) ? args[2] : /^snowflake$/i.test(name) ? args[1] : undefined;
  if (count === undefined) return 1;
  const n = Number(count);
  return Number.isSafeInteger(n) && n > 0 ? 1 + Math.floor(Math.min(n, 1e6) / 64) : 1;
}

/**
 * One client: commands are read from each chunk in order and answered in that order. Replies that
 * are ready join one string written at the end of the chunk; a command that waits (a segment load)
 * holds a slot, and the replies after it are queued behind it, so order holds under pipelining.
 * Past `maxInFlight` queued replies the socket is paused (TCP backpressure reaches the client)
 * and the unread bytes stay in the parser, bounded by the kernel's buffer, not by frond's.
 */
class RespConnection {
  private readonly parser: RespParser;
  private readonly queue: Slot[] = [];
  private out = '';
  /** The weights of the slots in `queue` (`commandWeight`). */
  private inFlight = 0;
  private paused = false;
  private ending = false;
  private readonly session: RespSession;

  constructor(
    private readonly socket: Socket,
    id: number,
    private readonly server: RespPort,
  ) {
    this.parser = new RespParser(server.options.limits);
    this.session = {
      id,
      client: socket.remoteAddress ?? '',
      proto: 2,
      authed: false,
      name: undefined,
      quit: false,
    };
    socket.setNoDelay(true);
    if (server.options.idleTimeoutMs > 0) {
      socket.setTimeout(server.options.idleTimeoutMs, () => socket.destroy());
    }
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('drain', () => this.resume());
    // A reset by the client is no failure of the node's.
    socket.on('error', () => socket.destroy());
    // A client gone with commands still unread: none of them runs. Without this, each reply that
    // settled read on into the parser's buffer (up to 64 KiB, about 4,300 `IDS tag 10000`) and
    // the node went on issuing IDs for nobody: 5.6 M in 3 s after 20 such clients left.
    socket.once('close', () => {
      this.ending = true;
      this.parser.discard();
    });
  }

  private onData(chunk: Buffer): void {
    if (this.ending) return;
    this.parser.push(chunk);
    this.readCommands();
  }

  private readCommands(): void {
    const { server, session } = this;
    if (this.socket.destroyed) this.ending = true;
    const max = server.options.maxInFlight;
    try {
      while (!this.ending) {
        if (this.inFlight >= max) {
          this.pause();
          break;
        }
        const args = this.parser.next();
        if (args === undefined) break;
        const reply = runCommand(
          server.commands,
          args,
          session,
          server.needsAuth,
          server.logger,
          server.rateLimiter,
        );
        if (typeof reply === 'string') {
          if (this.queue.length === 0) this.out += reply;
          else this.push({ reply, weight: 1 });
        } else {
          const slot: Slot = { reply: undefined, weight: commandWeight(args) };
          this.push(slot);
          reply.then((text) => {
            slot.reply = text;
            this.drainQueue();
          });
        }
        if (session.quit || server.closing) this.ending = true;
      }
    } catch (caught) {
      // Only the parser throws here (commands answer their own errors); anything else is a bug,
      // answered and logged on this connection alone rather than thrown out of a socket event.
      if (caught instanceof RespProtocolError) {
        server.logger.log('debug', 'resp.protocol_error', { error: caught.message });
        this.reply(error('ERR', `Protocol error: ${caught.message}`));
      } else {
        this.reply(errorReply(caught, server.logger));
      }
      this.ending = true;
    }
    this.flush();
  }

  /** A reply at the end of the order (a protocol error, a shutdown). */
  private reply(text: string): void {
    if (this.queue.length === 0) this.out += text;
    else this.push({ reply: text, weight: 1 });
  }

  private push(slot: Slot): void {
    this.queue.push(slot);
    this.inFlight += slot.weight;
  }

  private drainQueue(): void {
    const queue = this.queue;
    let i = 0;
    while (i < queue.length && (queue[i] as Slot).reply !== undefined) {
      const slot = queue[i] as Slot;
      this.out += slot.reply;
      this.inFlight -= slot.weight;
      i++;
    }
    if (i === 0) return;
    queue.splice(0, i);
    this.flush();
    if (this.paused && this.inFlight < this.server.options.maxInFlight) this.resume();
  }

  private flush(): void {
    if (this.out !== '') {
      const text = this.out;
      this.out = '';
      if (!this.socket.destroyed && !this.socket.write(text, 'utf8')) this.pause();
    }
    if (this.ending && this.queue.length === 0) this.finish();
  }

  private pause(): void {
    if (this.paused) return;
    this.paused = true;
    this.socket.pause();
  }

  private resume(): void {
    if (!this.paused || this.socket.writableNeedDrain) return;
    if (this.inFlight >= this.server.options.maxInFlight) return;
    this.paused = false;
    this.socket.resume();
    // Bytes already read wait in the parser: their commands run now.
    this.readCommands();
  }

  private finished = false;
  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.socket.end();
  }

  /** The node closes: no more commands are read; the replies owed are written, then the end. */
  shutdown(): void {
    this.ending = true;
    this.flush();
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** The listening RESP port and its connections. */
class RespPort {
  commands: ReturnType<typeof createRespCommands> = new Map();
  needsAuth = true;
  rateLimiter: RateLimiter | undefined;
  readonly connections = new Set<RespConnection>();
  /** Connections that arrived before `serve`: not read yet. */
  private waiting: Socket[] | undefined = [];
  closing = false;
  private nextId = 1;

  constructor(
    readonly options: RespServerOptions,
    readonly logger: Logger,
  ) {}

  serve(deps: RespDeps): void {
    this.commands = createRespCommands(deps);
    this.needsAuth = deps.tokens.length > 0;
    this.rateLimiter = deps.rateLimiter;
    const waiting = this.waiting ?? [];
    this.waiting = undefined;
    for (const socket of waiting) if (!socket.destroyed) this.accept(socket);
  }

  accept(socket: Socket): void {
    if (this.closing) {
      socket.destroy();
      return;
    }
    if (this.waiting !== undefined) {
      this.waiting.push(socket);
      socket.on('error', () => socket.destroy());
      return;
    }
    const connection = new RespConnection(socket, this.nextId++, this);
    this.connections.add(connection);
    socket.once('close', () => this.connections.delete(connection));
  }

  /** Connections that never were served are cut: no command of theirs was read. */
  dropWaiting(): void {
    for (const socket of this.waiting ?? []) socket.destroy();
    this.waiting = [];
  }
}

/**
 * Opens the RESP port (plain TCP, or TLS with the node's HTTP certificate) on `--host`, before the
 * node claims anything, so a port in use stops the start before a file is written. Its commands
 * issue through the deps `serve` hands it, the node's own issuer and generator, so a tag's IDs
 * over RESP and HTTP come from one buffer and never repeat.
 */
export async function openRespServer(options: RespServerOptions, logger: Logger): Promise<RespServer> {
  const port = new RespPort({ limits: DEFAULT_RESP_LIMITS, ...options }, logger);
  const onConnection = (socket: Socket) => port.accept(socket);
  const server: Server = options.tls
    ? // HTTPS's settings: TLS 1.2 and up, AEAD suites only (no CBC, forward secrecy), as docs/security.md says.
      createTlsServer(
        { cert: options.tls.cert, key: options.tls.key, minVersion: 'TLSv1.2', ciphers: TLS_CIPHERS },
        onConnection,
      )
    : createNetServer(onConnection);
  server.maxConnections = options.maxConnections;
  onDropsThrottled(server, (refused) =>
    logger.log('warn', 'resp.connections_full', {
      maxConnections: options.maxConnections,
      refused,
      message: `${refused === 1 ? 'a RESP connection was' : `${refused} RESP connections were`} refused: ${options.maxConnections} are open (--resp-max-connections)`,
    }),
  );
  // A TLS handshake that fails is the client's problem, not the node's.
  server.on('tlsClientError', () => {});
  const host = await bindHost(server, { host: options.host, port: options.port }, logger).catch(
    (caught: unknown) => {
      // listen.ts names --port; this port is --resp-port.
      if (caught instanceof Error) caught.message = caught.message.replace(/--port\b/g, '--resp-port');
      throw caught;
    },
  );
  const { port: bound } = server.address() as AddressInfo;
  const url = `${options.tls ? 'rediss' : 'redis'}://${host.includes(':') ? `[${host}]` : host}:${bound}`;

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= new Promise<void>((resolve) => {
      port.closing = true;
      port.dropWaiting();
      const timer = setTimeout(() => {
        for (const connection of port.connections) connection.destroy();
      }, options.shutdownTimeoutMs);
      server.close(() => {
        clearTimeout(timer);
        resolve();
      });
      for (const connection of port.connections) connection.shutdown();
    });
    return closing;
  };
  return { url, port: bound, close, serve: (deps) => port.serve(deps) };
}
