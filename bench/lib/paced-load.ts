import { connect, type Socket } from 'node:net';
import { type LatencySummary, Samples, summarize } from './stats.js';

export interface PacedOptions {
  /** Requests per second, sent on schedule whether or not earlier answers arrived (open loop). */
  rate: number;
  durationMs: number;
  /** Keep-alive connections; a request waits in a queue (and the wait counts) when all are busy. */
  connections: number;
  /** Keep every response body (to count duplicate IDs). */
  keepBodies?: boolean;
}

export interface PacedResult {
  /** Answers per second over the scheduled duration. */
  achievedRate: number;
  latency: LatencySummary;
  /** Non-200 answers, and requests unanswered 5 s after the schedule ended. */
  errors: number;
  bodies: string[];
}

/** A request scheduled at `due` (ms, performance.now()) and the connection it went out on. */
interface Slot {
  socket: Socket;
  buffer: Buffer;
  due: number;
}

/**
 * A constant-rate load generator in the style of wrk2, over raw keep-alive sockets: every
 * millisecond it issues the requests due by then (start + i/rate), and a request's latency runs from
 * that moment, so a server that stalls for 50 ms is charged for every request that had to wait, not
 * just the one in flight (no coordinated omission). autocannon's rate limit instead sends each connection's per-second budget in one burst
 * at the start of every second, which would measure the bursts rather than the server.
 */
export async function pacedLoad(url: string, path: string, options: PacedOptions): Promise<PacedResult> {
  const { hostname, port } = new URL(url);
  const request = Buffer.from(`GET ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n\r\n`);
  const latencies = new Samples();
  const bodies: string[] = [];
  const queue: number[] = [];
  const free: Slot[] = [];
  let errors = 0;
  let outstanding = 0;
  let onIdle: (() => void) | undefined;

  const complete = (slot: Slot, status: number, body: string) => {
    latencies.push(performance.now() - slot.due);
    if (status !== 200) errors++;
    else if (options.keepBodies) bodies.push(body);
    outstanding--;
    const due = queue.shift();
    if (due !== undefined) send(slot, due);
    else free.push(slot);
    if (outstanding === 0) onIdle?.();
  };

  const send = (slot: Slot, due: number) => {
    slot.due = due;
    slot.socket.write(request);
  };

  const slots = await Promise.all(
    Array.from({ length: options.connections }, () => openSlot(hostname, Number(port), complete)),
  );
  free.push(...slots);

  const start = performance.now();
  let scheduled = 0;
  const total = Math.round((options.rate * options.durationMs) / 1000);
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      const due = Math.min(total, Math.floor(((now - start) * options.rate) / 1000) + 1);
      for (; scheduled < due; scheduled++) {
        // Timed from this tick, not from the ideal start + i/rate: a 1 ms timer would otherwise add up
        // to a millisecond to every figure. A request that finds every connection busy still waits.
        const at = now;
        outstanding++;
        const slot = free.pop();
        if (slot === undefined) queue.push(at);
        else send(slot, at);
      }
      if (scheduled < total) setTimeout(tick, 1);
      else resolve();
    };
    tick();
  });
  const elapsed = performance.now() - start;
  if (outstanding > 0) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 5_000);
      onIdle = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
  errors += outstanding;
  for (const slot of slots) slot.socket.destroy();
  return {
    achievedRate: ((scheduled - outstanding) * 1000) / Math.max(elapsed, options.durationMs),
    latency: summarize(latencies.values()),
    errors,
    bodies,
  };
}

function openSlot(
  host: string,
  port: number,
  complete: (slot: Slot, status: number, body: string) => void,
): Promise<Slot> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port, noDelay: true });
    const slot: Slot = { socket, buffer: Buffer.alloc(0), due: 0 };
    socket.once('connect', () => resolve(slot));
    // Before the connection: the run cannot start. After: the request in flight is never answered,
    // and the end of the run counts it as an error.
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      slot.buffer = slot.buffer.length === 0 ? chunk : Buffer.concat([slot.buffer, chunk]);
      // One request in flight per connection, so a complete response is the whole buffer.
      for (;;) {
        const response = parseResponse(slot.buffer);
        if (response === undefined) return;
        slot.buffer = slot.buffer.subarray(response.length);
        complete(slot, response.status, response.body);
      }
    });
  });
}

/** A complete HTTP/1.1 response at the start of `buffer` (content-length or chunked), or undefined. */
function parseResponse(buffer: Buffer): { status: number; body: string; length: number } | undefined {
  const end = buffer.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const head = buffer.toString('latin1', 0, end);
  const status = Number(head.slice(9, 12));
  const match = /\r\ncontent-length: *(\d+)/i.exec(head);
  if (match !== null) {
    const length = end + 4 + Number(match[1]);
    if (buffer.length < length) return undefined;
    return { status, body: buffer.toString('utf8', end + 4, length), length };
  }
  if (!/\r\ntransfer-encoding: *chunked/i.test(head)) throw new Error(`response without a length: ${head}`);
  let body = '';
  let at = end + 4;
  for (;;) {
    const lineEnd = buffer.indexOf('\r\n', at);
    if (lineEnd === -1) return undefined;
    const size = Number.parseInt(buffer.toString('latin1', at, lineEnd), 16);
    // A chunk is `SIZE\r\nDATA\r\n`; the last has size 0 and is followed by an empty line.
    const next = lineEnd + 2 + size + 2;
    if (buffer.length < next) return undefined;
    if (size === 0) return { status, body, length: next };
    body += buffer.toString('utf8', lineEnd + 2, lineEnd + 2 + size);
    at = next;
  }
}
