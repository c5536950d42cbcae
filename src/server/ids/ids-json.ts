const OPEN = Buffer.from('{"ids":[');

/**
 * `{"ids":[…]}` of whatever a tag issued: numbers as `idsJson` writes them, or a formatted tag's
 * numbers (text, JSON strings with their escapes: a format's literal text may hold `"` or `\`).
 * A batch is all one or all the other (one tag, one kind).
 */
export function issuedJson(ids: readonly (number | bigint | string)[]): Buffer {
  if (typeof ids[0] === 'string') return Buffer.from(JSON.stringify({ ids }));
  return idsJson(ids as readonly (number | bigint)[]);
}
const QUOTE = 0x22;
const COMMA = 0x2c;
const NINE = 0x39;
const ZERO = 0x30;
/** The longest ID in decimal: -2^63 has 20 characters. With two quotes and a comma: 23 bytes. */
const MAX_ID_BYTES = 23;

/**
 * `{"ids":["1","2",…]}` as bytes, each ID a JSON string (a 64-bit snowflake does not fit a JSON
 * number). A batch is mostly runs of consecutive IDs (a segment; one millisecond of snowflake), so an
 * ID one above the previous one is written by copying the previous digits and adding one in place:
 * about 15 ns an ID, where `String(id)` and UTF-8 encoding cost 26 ns for a number and 61 ns for a
 * bigint (1000 IDs on the bench machine). The bytes go to the socket as they are, with no string to
 * encode and far less garbage.
 */
export function idsJson(ids: readonly (number | bigint)[]): Buffer {
  const out = Buffer.allocUnsafe(OPEN.length + ids.length * MAX_ID_BYTES + 2);
  let at = OPEN.copy(out, 0);
  let previous: number | bigint | undefined;
  let previousStart = 0;
  let previousEnd = 0;
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i] as number | bigint;
    if (i > 0) out[at++] = COMMA;
    out[at++] = QUOTE;
    const start = at;
    let written = false;
    // Only positive IDs are incremented in place ("-5" + 1 is not "-6"); a batch that crosses from
    // number to bigint (a segment below 2^53, the next above) writes that ID from scratch.
    if (
      id > 0 &&
      (typeof id === 'bigint'
        ? typeof previous === 'bigint' && id === previous + 1n
        : typeof previous === 'number' && id === previous + 1)
    ) {
      const length = previousEnd - previousStart;
      for (let k = 0; k < length; k++) out[start + k] = out[previousStart + k] as number;
      let k = start + length - 1;
      while (k >= start && out[k] === NINE) out[k--] = ZERO;
      // All nines (999 -> 1000) needs one more digit: written from scratch below.
      if (k >= start) {
        out[k] = (out[k] as number) + 1;
        at += length;
        written = true;
      }
    }
    if (!written) at += out.write(String(id), start, 'latin1');
    previous = id;
    previousStart = start;
    previousEnd = at;
    out[at++] = QUOTE;
  }
  out[at++] = 0x5d; // ]
  out[at++] = 0x7d; // }
  return out.subarray(0, at);
}
