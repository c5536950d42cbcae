import { FrondError } from '../core/errors.js';
import type { OptionEntry } from '../core/option-entry.js';
import { readGivenFile } from '../platform/data-file.js';
import { storeFromJdbc } from './jdbc-url.js';
import { didYouMean, type RawValues, turned } from './options.js';

function invalid(message: string): FrondError {
  return new FrondError('INVALID_CONFIG', message);
}

function readText(path: string, flag: string, what: string): string {
  return readGivenFile(`${flag} ${path}`, path, what).toString('utf8');
}

/**
 * `--config FILE`: a JSON object whose keys are the entries' `configKey`, the flag names (`{"port":
 * 8080, "data-dir": "/var/lib/frond", "no-segment": true}`). An unknown key or a value of the wrong
 * type stops the start.
 */
export function readConfigFile(path: string, options: readonly OptionEntry[]): RawValues {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readText(path, '--config', 'a JSON file of settings (frond.json)'));
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

/**
 * Leaf reads its switches with Java's `Boolean.parseBoolean` on the value as `Properties` loads it
 * (trailing blanks kept): "true" in any case is on, anything else (empty, "yes", "1", "true ") is
 * off; an absent key is Leaf's default (leaf-server/src/main/java/com/sankuai/inf/leaf/server/
 * service/SegmentService.java and SnowflakeService.java: `Boolean.parseBoolean(properties
 * .getProperty(KEY, "true"))`). frond reads them the same, and says so when the text is not plainly
 * true or false.
 */
function leafBoolean(raw: string, key: string, path: string, warnings: string[]): boolean {
  const on = /^true$/i.test(raw);
  if (!on && !/^false$/i.test(raw))
    warnings.push(
      `${path}: ${key}=${JSON.stringify(raw)} is off, as Leaf reads it (Boolean.parseBoolean: only "true" is on)`,
    );
  return on;
}

/** Keys read only together with another key (`leaf.jdbc.url`'s user and password). */
const LEAF_COMPANION_KEYS = ['leaf.jdbc.username', 'leaf.jdbc.password'];

/**
 * Leaf keys whose text is not the setting's value as it stands; the rest are taken as they are
 * (booleans as `true`/`false`). A new key needs only a `leafKey` on its entry, and a line here if
 * its value must be converted.
 */
const LEAF_CONVERSIONS: Record<
  string,
  (value: string, props: Map<string, string>, path: string, warnings: string[]) => string
> = {
  'leaf.jdbc.url': (url, props, path, warnings) => {
    const converted = storeFromJdbc(
      url,
      props.get('leaf.jdbc.username')?.trim(),
      props.get('leaf.jdbc.password')?.trim(),
      `${path}: leaf.jdbc.url`,
    );
    warnings.push(...converted.warnings);
    return converted.store;
  },
};

/** A leaf.properties read: the values, and a line for each thing frond reads differently or not at all. */
export interface LeafProperties extends RawValues {
  warnings: string[];
}

/**
 * `--leaf-config leaf.properties`: the entries' `leafKey`s, so a Leaf user keeps its file. Switches
 * read as Leaf reads them (`leafBoolean`). An unknown `leaf.*` key is warned about (Leaf ignores
 * it too: it only asks for the keys it knows, leaf-server/.../Constants.java); other keys (Spring's)
 * are left alone.
 */
export function readLeafProperties(path: string, options: readonly OptionEntry[]): LeafProperties {
  const props = parseProperties(readText(path, '--leaf-config', "Leaf's leaf.properties"));
  const known = new Set([...options.map((entry) => entry.leafKey), ...LEAF_COMPANION_KEYS]);
  const warnings: string[] = [];
  for (const key of props.keys()) {
    if (key.startsWith('leaf.') && !known.has(key))
      warnings.push(`${path}: unknown Leaf key ${JSON.stringify(key)}, ignored (as Leaf does)`);
  }
  const values: RawValues['values'] = {};
  const sources: RawValues['sources'] = {};
  for (const entry of options) {
    const key = entry.leafKey;
    if (key === undefined) continue;
    const raw = props.get(key);
    if (raw === undefined) continue;
    if (entry.type === 'boolean') {
      values[entry.name] = leafBoolean(raw, key, path, warnings);
    } else {
      const value = raw.trim();
      if (value === '') continue;
      const convert = LEAF_CONVERSIONS[key];
      values[entry.name] = convert === undefined ? value : convert(value, props, path, warnings);
    }
    sources[entry.name] = `${path}: ${key}`;
  }
  return { values, sources, warnings };
}
