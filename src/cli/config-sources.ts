import { readFileSync } from 'node:fs';
import { FrondError } from '../core/errors.js';
import type { OptionSpec } from './options.js';

/** Values from a file, by option name, with where each came from for error messages. */
export interface FileValues {
  values: Record<string, string | boolean>;
  sources: Record<string, string>;
}

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
 * `--config FILE`: a JSON object whose keys are `serve`'s flag names (`{"port": 8080, "data-dir":
 * "/var/lib/frond", "no-segment": true}`). An unknown key or a value of the wrong type stops the start.
 */
export function readConfigFile(path: string, specs: Record<string, OptionSpec>): FileValues {
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
  const values: Record<string, string | boolean> = {};
  const sources: Record<string, string> = {};
  for (const [key, value] of Object.entries(parsed)) {
    const spec = specs[key];
    if (spec === undefined || key === 'config' || key === 'leaf-config')
      throw invalid(`${path}: unknown key ${JSON.stringify(key)}`);
    const where = `${path}: ${key}`;
    if (spec.type === 'boolean') {
      if (typeof value !== 'boolean') throw invalid(`${where} must be true or false`);
      values[key] = value;
    } else if (typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))) {
      values[key] = String(value);
    } else if (spec.multiple && Array.isArray(value) && value.every((item) => typeof item === 'string')) {
      values[key] = value.join(',');
    } else {
      throw invalid(
        `${where} must be a ${spec.multiple ? 'string or a list of strings' : 'string or a number'}`,
      );
    }
    sources[key] = where;
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

/** `jdbc:mysql://host:port/db?params` and Leaf's username/password become `mysql://user:pass@host:port/db`. */
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
  return `${scheme}://${auth}${match[2]}/${match[3]}`;
}

/**
 * `--leaf-config leaf.properties`: Leaf's keys mapped to frond's flags, so a Leaf user keeps its
 * file. As in Leaf's code, an absent `leaf.segment.enable` or `leaf.snowflake.enable` means on.
 * An unknown `leaf.*` key stops the start (a typo would otherwise be silently ignored); other keys
 * (Spring's) are left alone.
 */
export function readLeafProperties(path: string, specs: Record<string, OptionSpec>): FileValues {
  const props = parseProperties(readText(path, '--leaf-config'));
  const values: Record<string, string | boolean> = {};
  const sources: Record<string, string> = {};
  const set = (option: string, value: string | boolean, key: string) => {
    if (specs[option] === undefined) return;
    values[option] = value;
    sources[option] = `${path}: ${key}`;
  };
  const known = new Set([
    'leaf.name',
    'leaf.segment.enable',
    'leaf.snowflake.enable',
    'leaf.jdbc.url',
    'leaf.jdbc.username',
    'leaf.jdbc.password',
    'leaf.snowflake.zk.address',
    'leaf.snowflake.port',
  ]);
  for (const key of props.keys()) {
    if (key.startsWith('leaf.') && !known.has(key))
      throw invalid(`${path}: unknown Leaf key ${JSON.stringify(key)}`);
  }
  const get = (key: string) => props.get(key)?.trim();
  const name = get('leaf.name');
  if (name) set('name', name, 'leaf.name');
  const segment = get('leaf.segment.enable');
  if (segment) set('no-segment', !leafBoolean(segment, 'leaf.segment.enable', path), 'leaf.segment.enable');
  const snowflake = get('leaf.snowflake.enable');
  if (snowflake)
    set('no-snowflake', !leafBoolean(snowflake, 'leaf.snowflake.enable', path), 'leaf.snowflake.enable');
  const jdbc = get('leaf.jdbc.url');
  if (jdbc)
    set(
      'store',
      storeFromJdbc(jdbc, get('leaf.jdbc.username'), get('leaf.jdbc.password'), path),
      'leaf.jdbc.url',
    );
  const zk = get('leaf.snowflake.zk.address');
  if (zk) set('zk', zk, 'leaf.snowflake.zk.address');
  const serverPort = get('server.port');
  if (serverPort) set('port', serverPort, 'server.port');
  const snowflakePort = get('leaf.snowflake.port');
  if (snowflakePort) set('advertise-port', snowflakePort, 'leaf.snowflake.port');
  return { values, sources };
}
