/**
 * RESP replies as strings, ready to be joined and written once per read chunk: the server adds
 * each command's reply to one string and writes it when the chunk is done, so a pipeline of 16
 * `INCR`s costs one `write`. Pure: no socket. `proto` is 2 until a client sends `HELLO 3`.
 */

export type RespProto = 2 | 3;

export const OK = '+OK\r\n';
export const PONG = '+PONG\r\n';
export const EMPTY_ARRAY = '*0\r\n';

export function simple(text: string): string {
  return `+${oneLine(text)}\r\n`;
}

/** `-CODE message`: the first word is the code clients branch on (frond's codes, `ERR`, `NOAUTH`). */
export function error(code: string, message: string): string {
  return `-${code} ${oneLine(message)}\r\n`;
}

export function integer(value: number | bigint): string {
  return `:${value}\r\n`;
}

/** A bulk string; its length is in bytes of UTF-8. */
export function bulk(text: string): string {
  return `$${Buffer.byteLength(text)}\r\n${text}\r\n`;
}

/** A bulk string of ASCII only (an ID): its length is its count of characters. */
export function asciiBulk(text: string): string {
  return `$${text.length}\r\n${text}\r\n`;
}

export function nullBulk(proto: RespProto): string {
  return proto === 3 ? '_\r\n' : '$-1\r\n';
}

/** An array of replies already encoded. */
export function array(items: readonly string[]): string {
  return `*${items.length}\r\n${items.join('')}`;
}

export function integers(values: readonly (number | bigint)[]): string {
  let out = `*${values.length}\r\n`;
  for (const value of values) out += `:${value}\r\n`;
  return out;
}

/** A map (RESP3 `%`); in RESP2 a flat array of key, value, key, value… as `HGETALL` answers. */
export function map(entries: readonly (readonly [string, string])[], proto: RespProto): string {
  let out = proto === 3 ? `%${entries.length}\r\n` : `*${entries.length * 2}\r\n`;
  for (const [key, value] of entries) out += bulk(key) + value;
  return out;
}

/** A reply line never holds `\r` or `\n`: a message with one would end the reply early. */
function oneLine(text: string): string {
  return /[\r\n]/.test(text) ? text.replace(/[\r\n]+/g, ' ') : text;
}
