/**
 * RESP2/RESP3 requests as clients send them: multibulk arrays (`*2\r\n$4\r\nINCR\r\n$3\r\nabc\r\n`)
 * and inline commands (`INCR abc\r\n`, what `telnet` and `redis-cli` in a pipe send). Pure: bytes in,
 * commands out, no socket. A request that breaks the protocol or a limit is a `RespProtocolError`:
 * the server answers it and closes, as Redis does, since the bytes after it cannot be framed.
 */

/** The limits of one request; `DEFAULT_RESP_LIMITS` says why each is what it is. */
export interface RespLimits {
  /** Bytes of one bulk argument. */
  maxBulkBytes: number;
  /** Bytes of one inline command line, and of one whole multibulk command. */
  maxInlineBytes: number;
  /** Arguments of one command. */
  maxArgs: number;
}

export const DEFAULT_RESP_LIMITS: RespLimits = {
  // A tag is at most 128 characters (512 bytes of UTF-8); 64 KiB leaves room for any ECHO or AUTH.
  maxBulkBytes: 64 * 1024,
  // Redis' own inline limit is 64 KiB of query buffer; 1 MiB is generous and still bounded.
  maxInlineBytes: 1024 * 1024,
  // frond's longest command has 8 arguments (HELLO 3 AUTH u p SETNAME n); 1,024 is far above.
  maxArgs: 1024,
};

export class RespProtocolError extends Error {
  override readonly name = 'RespProtocolError';
}

const CR = 13;
const LF = 10;
const EMPTY = Buffer.alloc(0);

/**
 * Feeds on chunks (`push`) and hands out whole commands (`next`), each an array of its arguments
 * as UTF-8 strings. Bytes of an unfinished command are kept (only those), so a command split across
 * TCP packets is read once it is whole, and a chunk is never copied byte by byte.
 */
export class RespParser {
  private buffer: Buffer = EMPTY;
  private offset = 0;
  /** Where the line `header` read last ends: set beside its value rather than in a tuple per line. */
  private afterHeader = 0;
  private readonly limits: RespLimits;

  constructor(limits: Partial<RespLimits> = {}) {
    this.limits = { ...DEFAULT_RESP_LIMITS, ...limits };
  }

  /** Bytes received and not yet handed out as a command. */
  get pendingBytes(): number {
    return this.buffer.length - this.offset;
  }

  /** Drops the bytes not parsed yet (their client is gone). */
  discard(): void {
    this.buffer = EMPTY;
    this.offset = 0;
  }

  push(chunk: Buffer): void {
    if (this.offset >= this.buffer.length) {
      this.buffer = chunk;
    } else {
      // Only the unfinished tail of the last chunk is copied, once per chunk that completes it.
      this.buffer = Buffer.concat([this.buffer.subarray(this.offset), chunk]);
    }
    this.offset = 0;
  }

  /**
   * The next whole command, undefined when the bytes so far hold none. An empty inline line is
   * skipped, as Redis skips it. Throws `RespProtocolError` for bytes that break the protocol.
   */
  next(): string[] | undefined {
    for (;;) {
      const buffer = this.buffer;
      const start = this.offset;
      if (start >= buffer.length) return undefined;
      if (buffer[start] === 0x2a /* '*' */) {
        const command = this.multibulk();
        if (command === null) continue;
        if (command === undefined && buffer.length - start > this.limits.maxInlineBytes)
          throw new RespProtocolError(`command longer than ${this.limits.maxInlineBytes} bytes`);
        return command;
      }
      const end = this.lineEnd(start, this.limits.maxInlineBytes, 'inline command');
      if (end < 0) return undefined;
      // `\r\n` or a lone `\n` ends an inline line, as in Redis.
      const stop = end > start && buffer[end - 1] === CR ? end - 1 : end;
      this.offset = end + 1;
      const args = splitInline(buffer.toString('utf8', start, stop), this.limits.maxArgs);
      if (args.length > 0) return args;
    }
  }

  /** The index of the `\n` ending the line from `start`, or -1 when it has not arrived (within `max`). */
  private lineEnd(start: number, max: number, what: string): number {
    const buffer = this.buffer;
    const end = buffer.indexOf(LF, start);
    if (end < 0) {
      if (buffer.length - start > max) throw new RespProtocolError(`${what} longer than ${max} bytes`);
      return -1;
    }
    if (end - start > max) throw new RespProtocolError(`${what} longer than ${max} bytes`);
    return end;
  }

  /**
   * `*N\r\n` and N bulk strings; undefined (nothing consumed) until all of them are here, null for
   * `*0` or `*-1`, no command, which Redis reads past.
   */
  private multibulk(): string[] | undefined | null {
    const buffer = this.buffer;
    let at = this.offset;
    const count = this.header(at, 'multibulk');
    if (count === undefined) return undefined;
    if (count > this.limits.maxArgs)
      throw new RespProtocolError(`invalid multibulk length: more than ${this.limits.maxArgs} arguments`);
    at = this.afterHeader;
    if (count <= 0) {
      this.offset = at;
      return null;
    }
    const args: string[] = new Array(count);
    for (let i = 0; i < count; i++) {
      if (at >= buffer.length) return undefined;
      if (buffer[at] !== 0x24 /* '$' */)
        throw new RespProtocolError(`expected '$', got '${printable(buffer[at] as number)}'`);
      const length = this.header(at, 'bulk');
      if (length === undefined) return undefined;
      const afterBulkHeader = this.afterHeader;
      if (length < 0 || length > this.limits.maxBulkBytes)
        throw new RespProtocolError(
          `invalid bulk length: use 0 to ${this.limits.maxBulkBytes} bytes per argument`,
        );
      const end = afterBulkHeader + length;
      if (end + 2 > buffer.length) {
        return undefined;
      }
      if (buffer[end] !== CR || buffer[end + 1] !== LF)
        throw new RespProtocolError('a bulk string is not followed by \\r\\n');
      args[i] =
        i === 0 ? commandName(buffer, afterBulkHeader, end) : buffer.toString('utf8', afterBulkHeader, end);
      at = end + 2;
    }
    this.offset = at;
    return args;
  }

  /**
   * The integer of a `*N\r\n` or `$N\r\n` line at `at` (the index after it in `afterHeader`);
   * undefined when the line has not arrived. Digits are read by hand: no string is made, and no
   * tuple (three per `INCR tag`, the commonest command).
   */
  private header(at: number, what: 'multibulk' | 'bulk'): number | undefined {
    const buffer = this.buffer;
    const end = this.lineEnd(at, 32, `${what} length line`);
    if (end < 0) return undefined;
    if (end - 1 <= at || buffer[end - 1] !== CR) throw new RespProtocolError(`invalid ${what} length`);
    let i = at + 1;
    let negative = false;
    if (buffer[i] === 0x2d /* '-' */) {
      negative = true;
      i++;
    }
    if (i >= end - 1) throw new RespProtocolError(`invalid ${what} length`);
    let value = 0;
    for (; i < end - 1; i++) {
      const digit = (buffer[i] as number) - 48;
      if (digit < 0 || digit > 9) throw new RespProtocolError(`invalid ${what} length`);
      value = value * 10 + digit;
      // Far past any limit: refused before the number loses precision.
      if (value > 0x7fffffff) throw new RespProtocolError(`invalid ${what} length`);
    }
    this.afterHeader = end + 1;
    return negative ? -value : value;
  }
}

/** The ID commands' names as clients send them, shared rather than decoded per command. */
const NAMES = ['INCR', 'incr', 'GET', 'get', 'IDS', 'ids', 'SNOWFLAKE', 'snowflake'];

/**
 * A command's name: one of NAMES when its bytes are, with no string made (`toString` crosses into
 * C++: for `INCR`, 0.5 to 0.9 µs against 0.06 to 0.13 for this loop, timed side by side on the
 * loaded 2-core bench machine), else decoded.
 */
function commandName(buffer: Buffer, from: number, to: number): string {
  const length = to - from;
  for (const name of NAMES) {
    if (name.length !== length) continue;
    let same = true;
    for (let i = 0; i < length; i++)
      if (buffer[from + i] !== name.charCodeAt(i)) {
        same = false;
        break;
      }
    if (same) return name;
  }
  return buffer.toString('utf8', from, to);
}

/**
 * An inline line split as Redis' `sdssplitargs` does for the common cases: spaces and tabs
 * separate, `"…"` (with `\n`, `\r`, `\t`, `\"`, `\\` and `\xHH`) and `'…'` quote.
 */
export function splitInline(line: string, maxArgs: number): string[] {
  const args: string[] = [];
  let i = 0;
  const n = line.length;
  for (;;) {
    while (i < n && (line[i] === ' ' || line[i] === '\t')) i++;
    if (i >= n) return args;
    if (args.length >= maxArgs)
      throw new RespProtocolError(`invalid inline command: more than ${maxArgs} arguments`);
    let arg = '';
    const quote = line[i];
    if (quote === '"' || quote === "'") {
      i++;
      for (;;) {
        if (i >= n) throw new RespProtocolError('unbalanced quotes in request');
        const c = line[i] as string;
        if (c === quote) {
          i++;
          break;
        }
        if (c === '\\' && quote === '"' && i + 1 < n) {
          const e = line[i + 1] as string;
          const hex = e === 'x' ? line.slice(i + 2, i + 4) : '';
          if (/^[0-9a-fA-F]{2}$/.test(hex)) {
            arg += String.fromCharCode(Number.parseInt(hex, 16));
            i += 4;
            continue;
          }
          arg += e === 'n' ? '\n' : e === 'r' ? '\r' : e === 't' ? '\t' : e;
          i += 2;
          continue;
        }
        if (c === '\\' && quote === "'" && line[i + 1] === "'") {
          arg += "'";
          i += 2;
          continue;
        }
        arg += c;
        i++;
      }
      if (i < n && line[i] !== ' ' && line[i] !== '\t')
        throw new RespProtocolError('closing quote must be followed by a space');
    } else {
      const from = i;
      while (i < n && line[i] !== ' ' && line[i] !== '\t') i++;
      arg = line.slice(from, i);
    }
    args.push(arg);
  }
}

function printable(byte: number): string {
  return byte >= 0x20 && byte < 0x7f ? String.fromCharCode(byte) : `\\x${byte.toString(16).padStart(2, '0')}`;
}
