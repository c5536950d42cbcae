/**
 * `java.util.Properties.load(InputStream)` of JDK 17, step for step, because Leaf reads
 * leaf.properties with it (leaf-core/src/main/java/com/sankuai/inf/leaf/common/PropertyFactory.java:
 * `PROPERTIES.load(…getResourceAsStream("leaf.properties"))`) and a value read any other way can
 * name another ZooKeeper path or another password than the one Leaf uses:
 *
 * - the bytes are ISO-8859-1, one character each (`\uXXXX` is the way to write anything else);
 * - a logical line starts after blanks (space, tab, form feed) and empty lines; one whose first
 *   character is `#` or `!` is a comment; a line ending in an odd number of `\` goes on with the
 *   next, whose leading blanks are dropped; `\n`, `\r` and `\r\n` end lines;
 * - the key ends at the first unescaped `=`, `:` or blank; blanks, then one `=` or `:`, then blanks
 *   follow it; the rest of the line is the value, trailing blanks included;
 * - `\t`, `\n`, `\r`, `\f` and `\uXXXX` are escapes, `\` before any other character is that
 *   character, and a `\u` without four hex digits stops the load (`IllegalArgumentException`).
 */
export class MalformedPropertiesError extends Error {
  /** 0 until the line is known. */
  constructor(readonly line = 0) {
    super(`malformed \\uxxxx escape in line ${line}`);
  }
}

const isBlank = (c: string | undefined) => c === ' ' || c === '\t' || c === '\f';
const isEol = (c: string | undefined) => c === '\n' || c === '\r';

/**
 * The keys and values of a properties file's bytes; a later key replaces an earlier one, as in Java.
 * `latin1Keys` gets the keys whose line holds a byte above 127 (read as ISO-8859-1, not UTF-8).
 */
export function loadJavaProperties(bytes: Buffer, latin1Keys?: Set<string>): Map<string, string> {
  const text = bytes.toString('latin1');
  const result = new Map<string, string>();
  for (const { chars, start } of logicalLines(text)) {
    const [key, value] = splitLine(chars);
    try {
      const name = loadConvert(key);
      result.set(name, loadConvert(value));
      if (/[\x80-\xff]/.test(chars)) latin1Keys?.add(name);
    } catch (error) {
      if (!(error instanceof MalformedPropertiesError)) throw error;
      throw new MalformedPropertiesError(lineOf(text, start));
    }
  }
  return result;
}

/** The physical line (from 1) of `index`: `\n`, `\r` and `\r\n` each end one. */
function lineOf(text: string, index: number): number {
  return text.slice(0, index).split(/\r\n|\r|\n/).length;
}

/** Properties.LineReader.readLine: each logical line, continuations joined, and where it starts in `text`. */
function logicalLines(text: string): { chars: string; start: number }[] {
  const lines: { chars: string; start: number }[] = [];
  const n = text.length;
  let i = 0;
  for (;;) {
    let chars = '';
    let start = i;
    let skipBlanks = true;
    let appendedLineBegin = false;
    let precedingBackslash = false;
    for (;;) {
      if (i >= n) {
        if (chars.length > 0) lines.push({ chars: precedingBackslash ? chars.slice(0, -1) : chars, start });
        return lines;
      }
      const c = text[i++] as string;
      if (skipBlanks) {
        if (isBlank(c)) continue;
        if (!appendedLineBegin && isEol(c)) continue;
        skipBlanks = false;
        appendedLineBegin = false;
      }
      // Still on a new logical line, which includes the line after a lone `\`, as in Java.
      if (chars.length === 0 && (c === '#' || c === '!')) {
        while (i < n && !isEol(text[i])) i++;
        skipBlanks = true;
        continue;
      }
      if (!isEol(c)) {
        if (chars.length === 0) start = i - 1;
        chars += c;
        precedingBackslash = c === '\\' ? !precedingBackslash : false;
        continue;
      }
      if (chars.length === 0) {
        skipBlanks = true;
        continue;
      }
      if (i >= n) {
        lines.push({ chars: precedingBackslash ? chars.slice(0, -1) : chars, start });
        return lines;
      }
      if (!precedingBackslash) {
        lines.push({ chars, start });
        break;
      }
      // The backslash at the end of the line is not part of it; the next line's blanks are dropped.
      chars = chars.slice(0, -1);
      skipBlanks = true;
      appendedLineBegin = true;
      precedingBackslash = false;
      if (c === '\r' && text[i] === '\n') i++;
    }
  }
}

/** Properties.load0: the key up to the first unescaped separator, then the value after blanks and one `=` or `:`. */
function splitLine(line: string): [string, string] {
  let keyLength = 0;
  let valueStart = line.length;
  let hasSeparator = false;
  let precedingBackslash = false;
  while (keyLength < line.length) {
    const c = line[keyLength];
    if ((c === '=' || c === ':') && !precedingBackslash) {
      valueStart = keyLength + 1;
      hasSeparator = true;
      break;
    }
    if (isBlank(c) && !precedingBackslash) {
      valueStart = keyLength + 1;
      break;
    }
    precedingBackslash = c === '\\' ? !precedingBackslash : false;
    keyLength++;
  }
  while (valueStart < line.length) {
    const c = line[valueStart];
    if (!isBlank(c)) {
      if (hasSeparator || (c !== '=' && c !== ':')) break;
      hasSeparator = true;
    }
    valueStart++;
  }
  return [line.slice(0, keyLength), line.slice(valueStart)];
}

const ESCAPES: Record<string, string> = { t: '\t', r: '\r', n: '\n', f: '\f' };

/** Properties.loadConvert: the escapes. */
function loadConvert(text: string): string {
  if (!text.includes('\\')) return text;
  let out = '';
  for (let i = 0; i < text.length; ) {
    const c = text[i++] as string;
    if (c !== '\\') {
      out += c;
      continue;
    }
    const escaped = text[i++] as string;
    if (escaped !== 'u') {
      out += ESCAPES[escaped] ?? escaped;
      continue;
    }
    const hex = text.slice(i, i + 4);
    if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw new MalformedPropertiesError();
    out += String.fromCharCode(Number.parseInt(hex, 16));
    i += 4;
  }
  return out;
}
