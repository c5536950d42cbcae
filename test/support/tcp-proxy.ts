import { connect, createServer, type Server, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

/**
 * `open` forwards; `refuse` resets every new connection (a server that is down); `blackhole`
 * accepts connections and forwards nothing either way (a server or network that hangs).
 */
export type ProxyMode = 'open' | 'refuse' | 'blackhole';

interface Pair {
  client: Socket;
  upstream: Socket | undefined;
  timer: NodeJS.Timeout | undefined;
}

/**
 * A TCP proxy on 127.0.0.1 between a node and its database, for outage and latency tests: Toxiproxy
 * is not packaged for Debian and `tc netem` is missing from these machines' kernels.
 */
export class TcpProxy {
  /** Added to every chunk the server sends back, so every round trip takes this much longer. */
  latencyMs = 0;
  /** Connections accepted so far. */
  accepted = 0;
  private mode: ProxyMode = 'open';
  private readonly pairs = new Set<Pair>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private target: { host: string; port: number },
  ) {}

  /** Cuts every connection; new ones go to `port` (a DNS name or a VIP moved to another server). */
  retarget(port: number, host = '127.0.0.1'): void {
    for (const pair of this.pairs) this.drop(pair, true);
    this.target = { host, port };
  }

  static async start(target: { host?: string; port: number }): Promise<TcpProxy> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('the proxy has no TCP port');
    const proxy = new TcpProxy(server, address.port, { host: target.host ?? '127.0.0.1', port: target.port });
    server.on('connection', (socket) => proxy.accept(socket));
    return proxy;
  }

  /** Resets every connection and refuses new ones until `restore`: the database went away. */
  cut(): void {
    this.mode = 'refuse';
    for (const pair of this.pairs) this.drop(pair, true);
  }

  /** Existing connections go silent and new ones are accepted but never answered. */
  blackhole(): void {
    this.mode = 'blackhole';
  }

  restore(): void {
    this.mode = 'open';
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    this.accepted++;
    if (this.mode === 'refuse') {
      client.resetAndDestroy();
      return;
    }
    const pair: Pair = { client, upstream: undefined, timer: undefined };
    this.pairs.add(pair);
    client.on('error', () => this.drop(pair, false));
    client.on('close', () => this.drop(pair, false));
    // In a blackhole the connection is held open, silent, until the mode changes to refuse.
    if (this.mode === 'blackhole') return;
    const upstream = connect(this.target.port, this.target.host);
    pair.upstream = upstream;
    upstream.on('error', () => this.drop(pair, true));
    upstream.on('close', () => this.drop(pair, false));
    const queue: { at: number; chunk: Buffer }[] = [];
    const flush = () => {
      pair.timer = undefined;
      const now = performance.now();
      while (queue.length > 0 && (queue[0] as { at: number }).at <= now) {
        client.write((queue.shift() as { chunk: Buffer }).chunk);
      }
      const first = queue[0];
      if (first !== undefined) pair.timer = setTimeout(flush, Math.max(0, first.at - now));
    };
    client.on('data', (chunk: Buffer) => {
      if (this.mode === 'open') upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (this.mode !== 'open') return;
      if (this.latencyMs === 0 && queue.length === 0) {
        client.write(chunk);
        return;
      }
      // In order, each chunk `latencyMs` after it arrived.
      queue.push({ at: performance.now() + this.latencyMs, chunk });
      pair.timer ??= setTimeout(flush, this.latencyMs);
    });
  }

  private drop(pair: Pair, reset: boolean): void {
    if (!this.pairs.delete(pair)) return;
    if (pair.timer !== undefined) clearTimeout(pair.timer);
    if (reset) pair.client.resetAndDestroy();
    else pair.client.destroy();
    pair.upstream?.destroy();
  }
}
