import { readFileSync } from 'node:fs';
import { FrondError } from '../core/errors.js';
import { type JdbcDialect, tlsParametersFromJdbc } from './jdbc-tls.js';
import type { OptionEntry } from './option-entry.js';
import { didYouMean, type RawValues, turned } from './options.js';

function invalid(message: string): FrondError {
  return new FrondError('INVALID_CONFIG', message);
}

function readText(path: string, flag: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw invalid(
      `${flag} ${path}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}`,
    );
  }
}

/**
 * `--config FILE`: a JSON object whose keys are the entries' `configKey`, the flag names (`{"port":
 * 8080, "data-dir": "/var/lib/frond", "no-segment": true}`). An unknown key or a value of the wrong
 * type stops the start.
 */
export function readConfigFile(path: string, options: readonly OptionEntry[]): RawValues {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readText(path, '--config'));
  } catch (error) {
    if (error instanceof FrondError) throw error;
    throw invalid(`--config ${path} is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw invalid(`--config ${path} must hold a JSON object of flag names and values`);
  }
  const byKey = new Map(
    options.filter((entry) => entry.configKey !== null).map((entry) => [entry.configKey, entry]),
  );
  const values: RawValues['values'] = {};
  const sources: RawValues['sources'] = {};
  for (const [key, value] of Object.entries(parsed)) {
    const entry = byKey.get(key);
    if (entry === undefined)
      throw invalid(
        `${path}: unknown key ${JSON.stringify(key)}${didYouMean(key, [...byKey.keys()] as string[])}`,
      );
    const where = `${path}: ${key}`;
    const list = entry.type === 'list';
    if (entry.type === 'boolean') {
      if (typeof value !== 'boolean') throw invalid(`${where} must be true or false`);
      values[entry.name] = turned(entry, value);
    } else if (typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))) {
      // A list given as one string is one item: only the environment splits at commas.
      values[entry.name] = list ? [String(value)] : String(value);
    } else if (list && Array.isArray(value) && value.every((item) => typeof item === 'string')) {
      values[entry.name] = value;
    } else {
      throw invalid(`${where} must be a ${list ? 'string or a list of strings' : 'string or a number'}`);
    }
    sources[entry.name] = where;
  }
  return { values, sources };
}

/** Reads a Java properties file: `key=value`, `key: value` or `key value`, `#`/`!` comments, `\` continuations. */
export function parseProperties(text: string): Map<string, string> {
  const result = new Map<string, string>();
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    let line = (lines[i] as string).trimStart();
    if (line === '' || line.startsWith('#') || line.startsWith('!')) continue;
    while (/(^|[^\\])(\\\\)*\\$/.test(line) && i + 1 < lines.length) {
      line = line.slice(0, -1) + (lines[++i] as string).trimStart();
    }
    const match = /^((?:\\.|[^=:\s\\])+)\s*[=:\s]\s*(.*)$/.exec(line);
    const key = unescapeJava(match ? (match[1] as string) : line);
    result.set(key, unescapeJava(match ? (match[2] as string) : ''));
  }
  return result;
}

function unescapeJava(text: string): string {
  return text.replace(/\\(u[0-9a-fA-F]{4}|.)/g, (_, c: string) => {
    if (c.length === 5) return String.fromCharCode(Number.parseInt(c.slice(1), 16));
    return ({ t: '\t', n: '\n', r: '\r', f: '\f' } as Record<string, string>)[c] ?? c;
  });
}

function leafBoolean(value: string, key: string, path: string): boolean {
  if (/^true$/i.test(value)) return true;
  if (/^false$/i.test(value)) return false;
  throw invalid(`${path}: ${key}=${value} must be true or false`);
}

/**
 * `jdbc:mysql://host:port/db?params` and Leaf's username/password become
 * `mysql://user:pass@host:port/db`, with the URL's TLS properties as TLS parameters.
 */
function storeFromJdbc(
  url: string,
  user: string | undefined,
  password: string | undefined,
  path: string,
): string {
  const match = /^jdbc:(mysql|mariadb|postgresql):\/\/([^/?]+)\/([^?;]+)/.exec(url.trim());
  if (!match)
    throw invalid(
      `${path}: leaf.jdbc.url ${JSON.stringify(url)} is not a jdbc:mysql:// or jdbc:postgresql:// URL`,
    );
  const scheme = match[1] === 'postgresql' ? 'postgres' : 'mysql';
  const auth = user
    ? `${encodeURIComponent(user)}${password ? `:${encodeURIComponent(password)}` : ''}@`
    : '';
  // The driver's TLS properties become the store's TLS parameters (jdbc-tls.ts).
  const query = url.trim().slice(match[0].length).replace(/^[?;]/, '');
  const tls = tlsParametersFromJdbc(match[1] as JdbcDialect, query, `${path}: leaf.jdbc.url`);
  return `${scheme}://${auth}${match[2]}/${match[3]}${tls.length === 0 ? '' : `?${new URLSearchParams(tls)}`}`;
}

/** Keys read only together with another key (`leaf.jdbc.url`'s user and password). */
const LEAF_COMPANION_KEYS = ['leaf.jdbc.username', 'leaf.jdbc.password'];

/**
 * Leaf keys whose text is not the setting's value as it stands; the rest are taken as they are
 * (booleans as `true`/`false`). A new key needs only a `leafKey` on its entry, and a line here if
 * its value must be converted.
 */
const LEAF_CONVERSIONS: Record<string, (value: string, props: Map<string, string>, path: string) => string> =
  {
    'leaf.jdbc.url': (url, props, path) =>
      storeFromJdbc(
        url,
        props.get('leaf.jdbc.username')?.trim(),
        props.get('leaf.jdbc.password')?.trim(),
        path,
      ),
  };

/**
 * `--leaf-config leaf.properties`: the entries' `leafKey`s, so a Leaf user keeps its file. As in
 * Leaf's code, an absent `leaf.segment.enable` or `leaf.snowflake.enable` means on. An unknown
 * `leaf.*` key stops the start (a typo would otherwise be silently ignored); other keys (Spring's)
 * are left alone.
 */
export function readLeafProperties(path: string, options: readonly OptionEntry[]): RawValues {
  const props = parseProperties(readText(path, '--leaf-config'));
  const known = new Set([...options.map((entry) => entry.leafKey), ...LEAF_COMPANION_KEYS]);
  for (const key of props.keys()) {
    if (key.startsWith('leaf.') && !known.has(key))
      throw invalid(`${path}: unknown Leaf key ${JSON.stringify(key)}`);
  }
  const values: RawValues['values'] = {};
  const sources: RawValues['sources'] = {};
  for (const entry of options) {
    const key = entry.leafKey;
    const value = key === undefined ? undefined : props.get(key)?.trim();
    if (key === undefined || !value) continue;
    const convert = LEAF_CONVERSIONS[key];
    values[entry.name] =
      entry.type === 'boolean'
        ? leafBoolean(value, key, path)
        : convert === undefined
          ? value
          : convert(value, props, path);
    sources[entry.name] = `${path}: ${key}`;
  }
  return { values, sources };
}
