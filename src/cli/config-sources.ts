import { FrondError } from '../core/errors.js';
import type { OptionEntry } from '../core/option-entry.js';
import { readGivenFile } from '../platform/data-file.js';
import { loadJavaProperties, MalformedPropertiesError } from './java-properties.js';
import { storeFromJdbc } from './jdbc-url.js';
import { didYouMean, type RawValues, turned } from './options.js';

function invalid(message: string): FrondError {
  return new FrondError('INVALID_CONFIG', message);
}

function readText(path: string, flag: string, what: string): string {
  return readBytes(path, flag, what).toString('utf8');
}

function readBytes(path: string, flag: string, what: string): Buffer {
  return readGivenFile(`${flag} ${path}`, path, what);
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
    // The user and password as Leaf hands them to Druid: blanks are part of a password.
    const converted = storeFromJdbc(
      url,
      props.get('leaf.jdbc.username'),
      props.get('leaf.jdbc.password'),
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
 * `--leaf-config leaf.properties`: the entries' `leafKey`s, so a Leaf user keeps its file. The file is
 * read as Leaf reads it, with `Properties.load` (java-properties.ts): a value keeps its trailing
 * blanks, so `leaf.name=orders ` is the ZooKeeper path `/snowflake/orders /` in frond as in Leaf;
 * one warning names every key whose value ends in a blank. Numbers and addresses are then read
 * without their blanks by their settings (Leaf's `Integer.parseInt` would refuse to start).
 * Switches read as Leaf reads them (`leafBoolean`). An unknown `leaf.*` key is warned about (Leaf
 * ignores it too: it only asks for the keys it knows, leaf-server/.../Constants.java); other keys
 * (Spring's) are left alone.
 */
export function readLeafProperties(path: string, options: readonly OptionEntry[]): LeafProperties {
  const bytes = readBytes(path, '--leaf-config', "Leaf's leaf.properties");
  let props: Map<string, string>;
  const latin1 = new Set<string>();
  try {
    props = loadJavaProperties(bytes, latin1);
  } catch (error) {
    if (!(error instanceof MalformedPropertiesError)) throw error;
    throw invalid(`${path}: ${error.message}, which Leaf's Properties.load refuses (Leaf does not start)`);
  }
  const known = new Set([...options.map((entry) => entry.leafKey), ...LEAF_COMPANION_KEYS]);
  const warnings: string[] = [];
  for (const key of props.keys()) {
    if (key.startsWith('leaf.') && !known.has(key))
      warnings.push(`${path}: unknown Leaf key ${JSON.stringify(key)}, ignored (as Leaf does)`);
  }
  const blank = [...props].filter(([key, value]) => known.has(key) && /[ \t\f]$/.test(value));
  if (blank.length > 0)
    warnings.push(
      `${path}: ${blank.map(([key]) => key).join(', ')} end${blank.length === 1 ? 's' : ''} in a blank, kept as Leaf's Properties.load keeps it (a name or password with it is another name or password); remove it unless it is meant`,
    );
  const readAsLatin1 = [...latin1].filter((key) => known.has(key));
  if (readAsLatin1.length > 0)
    warnings.push(
      `${path}: ${readAsLatin1.join(', ')} hold${readAsLatin1.length === 1 ? 's' : ''} bytes above 127, read as ISO-8859-1 as Leaf's Properties.load reads them (UTF-8 "é" is "Ã©"); write other characters as \\uXXXX`,
    );
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
      if (raw === '') continue;
      const convert = LEAF_CONVERSIONS[key];
      values[entry.name] = convert === undefined ? raw : convert(raw, props, path, warnings);
    }
    sources[entry.name] = `${path}: ${key}`;
  }
  return { values, sources, warnings };
}
