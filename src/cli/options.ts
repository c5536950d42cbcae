import { parseArgs } from 'node:util';
import { FrondError } from '../core/errors.js';
import type { OptionEntry, SettingsOf } from '../core/option-entry.js';
import { readGivenFile } from '../platform/data-file.js';
import { COMMANDS, type CommandSpec } from './option-table.js';

/**
 * Values by setting name as given (text, or a boolean already turned the way the setting reads:
 * `--no-segment` is `segment: false`), before type and bounds are checked; with where each came
 * from for error messages: `--port`, `FROND_PORT`, `/etc/frond.json: port`.
 */
export interface RawValues {
  /** A list is its items as given (a flag's value is never split; an environment variable's is, at commas). */
  values: Record<string, string | boolean | string[]>;
  sources: Record<string, string>;
}

/** A command's checked settings and its positional arguments. */
export interface ParsedCommand<O extends readonly OptionEntry[]> {
  settings: SettingsOf<O>;
  positionals: string[];
  sources: Record<string, string>;
}

export interface ParseContext {
  env?: NodeJS.ProcessEnv;
  /** Config files, the first given winning over the next; all below flags and the environment. */
  files?: RawValues[];
  /**
   * A `FROND_*` variable no command reads stops the command: a typo (`FROND_STROE`) would be
   * silently ignored. Every command sets it; a variable of another command (`FROND_PORT` for `frond
   * tag list`) is not refused, so one environment serves every command.
   */
  rejectUnknownEnv?: boolean;
  /** ms since 1970, the bound of `max: 'now'`. */
  now?: number;
  /**
   * Spring Boot's spellings of the settings that have a `springKey`, how Leaf is deployed
   * (`--server.port=N` on the command line, `SERVER_PORT`): `read` takes them, `--server.port=N`
   * among the flags and `SERVER_PORT` right after `FROND_PORT`, as Spring puts the command line
   * above the environment; `refuse` stops at a `--server.…=` argument, saying when it is read;
   * `skip` sets the arguments aside unread (a first pass that only looks for the config files).
   * Absent: the command takes none, and `--server.port=N` is an unknown option.
   */
  spring?: 'read' | 'refuse' | 'skip';
}

/** Read by `OpaqueSecret.fromEnvironment`, never by the option table (a secret is not a setting to print). */
const SECRET_ENV = new Set(['FROND_OPAQUE_SECRET', 'FROND_OPAQUE_SECRET_FILE']);

export function usage(message: string): FrondError {
  return new FrondError('INVALID_ARGUMENT', message);
}

/** Flags, then `FROND_*` variables, then the files, then the defaults; every value checked. */
export function parseCommand<O extends readonly OptionEntry[]>(
  command: CommandSpec<O>,
  args: string[],
  context: ParseContext = {},
): ParsedCommand<O> {
  const { raw, positionals } = parseRaw(command, args, context);
  return {
    settings: resolveSettings(command.options, raw, context.now),
    positionals,
    sources: raw.sources,
  };
}

/**
 * Flags first, then `FROND_*` environment variables (then a platform's, `PORT`), then `context.files`. Unknown flags and extra
 * arguments are errors with one line that says what to fix.
 */
export function parseRaw(
  command: CommandSpec,
  args: string[],
  context: ParseContext = {},
): { raw: RawValues; positionals: string[] } {
  const { env = process.env, files = [] } = context;
  const { rest, spring } =
    context.spring === undefined
      ? { rest: args, spring: new Map<string, string>() }
      : springArgs(command, args);
  const [springArg] = spring;
  if (context.spring === 'refuse' && springArg !== undefined) {
    const [key, value] = springArg;
    const entry = command.options.find((candidate) => candidate.springKey === key) as OptionEntry;
    throw usage(
      `--${key}=${value} is Spring's spelling, read with --leaf-config (as Leaf runs); without it give --${entry.flag} ${value}`,
    );
  }
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: negativeValues(command, rest),
      options: Object.fromEntries(
        command.options.map((entry) => [
          entry.flag,
          {
            type: entry.type === 'boolean' ? 'boolean' : 'string',
            multiple: entry.type === 'list',
            ...(entry.short === undefined ? {} : { short: entry.short }),
          },
        ]),
      ),
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const unknown = /Unknown option '([^']+)'/.exec(message);
    if (unknown) {
      const flags = command.options.map((entry) => `--${entry.flag}`);
      throw usage(
        `unknown option ${unknown[1]} for 'frond ${command.name}'${didYouMean(unknown[1] as string, flags)} (see 'frond ${command.name} --help')`,
      );
    }
    // `--port --host x`: node's parser says "argument is ambiguous"; say what is missing instead.
    const ambiguous = /Option '(-[^ ']*)/.exec(message);
    if (ambiguous && /ambiguous|argument missing/.test(message))
      throw usage(`${ambiguous[1]} needs a value (frond ${command.name})`);
    throw usage(`${message.split('.')[0]} (frond ${command.name})`);
  }
  const values: RawValues['values'] = {};
  const sources: RawValues['sources'] = {};
  const readSpring = context.spring === 'read';
  for (const entry of command.options) {
    const flag = parsed.values[entry.flag];
    const springFlag = readSpring && entry.springKey !== undefined ? spring.get(entry.springKey) : undefined;
    if (flag !== undefined && springFlag !== undefined)
      throw usage(`--${entry.flag} and --${entry.springKey}: pick one`);
    if (flag !== undefined) {
      values[entry.name] = Array.isArray(flag) ? flag.map(String) : turned(entry, flag as string | boolean);
      sources[entry.name] = `--${entry.flag}`;
      continue;
    }
    if (springFlag !== undefined) {
      values[entry.name] = springFlag;
      sources[entry.name] = `--${entry.springKey}`;
      continue;
    }
    const variable = [entry.env, readSpring ? entry.springEnv : undefined, entry.platformEnv].find(
      (name): name is string => typeof name === 'string' && env[name] !== undefined && env[name] !== '',
    );
    const text = variable === undefined ? undefined : (env[variable] as string);
    if (variable !== undefined && entry.fileEnv !== undefined && (env[entry.fileEnv] ?? '') !== '')
      throw usage(`set ${variable} or ${entry.fileEnv}, not both`);
    if (variable !== undefined && text !== undefined) {
      values[entry.name] =
        entry.type === 'boolean'
          ? turned(entry, parseBoolean(variable, text))
          : entry.type === 'list'
            ? text.split(',').map((item) => item.trim())
            : text;
      sources[entry.name] = variable;
      continue;
    }
    const secretFile = entry.fileEnv === undefined ? undefined : env[entry.fileEnv];
    if (entry.fileEnv !== undefined && secretFile !== undefined && secretFile !== '') {
      values[entry.name] = readSecretFile(entry.fileEnv, secretFile, entry.type === 'list');
      sources[entry.name] = entry.fileEnv;
      continue;
    }
    for (const file of files) {
      const value = file.values[entry.name];
      if (value === undefined) continue;
      values[entry.name] = value;
      sources[entry.name] = file.sources[entry.name] ?? entry.name;
      break;
    }
  }
  if (context.rejectUnknownEnv) {
    const known = new Set(
      [command, ...COMMANDS]
        .flatMap((spec) => spec.options.flatMap((entry) => [entry.env, entry.fileEnv]))
        .filter((name): name is string => !!name),
    );
    const unknown = Object.keys(env).find(
      (key) => key.startsWith('FROND_') && !known.has(key) && !SECRET_ENV.has(key),
    );
    if (unknown !== undefined)
      throw usage(
        `unknown environment variable ${unknown} for 'frond ${command.name}'${didYouMean(unknown, [
          ...known,
        ])} (see 'frond ${command.name} --help')`,
      );
  }
  const names = command.positionals;
  if (parsed.positionals.length > names.length) {
    throw usage(
      `unexpected argument ${JSON.stringify(parsed.positionals[names.length])} for 'frond ${command.name}'`,
    );
  }
  const missing = names.slice(parsed.positionals.length).filter((name) => !name.endsWith('?'));
  if (missing.length > 0)
    throw usage(`'frond ${command.name}' needs ${missing.map((name) => `<${name}>`).join(' ')}`);
  return { raw: { values, sources }, positionals: parsed.positionals };
}

/**
 * Takes Spring's `--server.port=N` out of `args` (before `--`), by the `springKey`s of `command`:
 * Spring's command line (SimpleCommandLineArgsParser) reads only `--name=value`, so
 * `--server.port 8081` is refused rather than read the way Spring would (no value, and the port its
 * default). Other `--server.…` arguments stay, and are refused as unknown options.
 */
function springArgs(command: CommandSpec, args: string[]): { rest: string[]; spring: Map<string, string> } {
  const keys = new Set(command.options.map((entry) => entry.springKey).filter((key) => key !== undefined));
  const rest: string[] = [];
  const spring = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '--') {
      rest.push(...args.slice(i));
      break;
    }
    const match = /^--([^=]+)(=([\s\S]*))?$/.exec(arg);
    const key = match?.[1];
    if (key === undefined || !keys.has(key)) {
      rest.push(arg);
      continue;
    }
    if (match?.[2] === undefined)
      throw usage(
        `--${key} takes its value after '=' (--${key}=VALUE), as Spring reads it: with a space Spring reads no value`,
      );
    if (spring.has(key)) throw usage(`--${key} is given twice`);
    spring.set(key, match[3] as string);
  }
  return { rest, spring };
}

/** A `no-…` flag (and its variable and key) says true to turn its setting off. */
export function turned(entry: OptionEntry, value: string | boolean): string | boolean {
  return entry.negated && typeof value === 'boolean' ? !value : value;
}

function parseBoolean(variable: string, text: string): boolean {
  if (/^(1|true|yes|on)$/i.test(text)) return true;
  if (/^(0|false|no|off)$/i.test(text)) return false;
  throw usage(`${variable}=${JSON.stringify(text)} is not a boolean: use true or false`);
}

/** Each entry's value, typed and within its bounds, or its default; a bad one is a one-line error. */
export function resolveSettings<O extends readonly OptionEntry[]>(
  options: O,
  raw: RawValues,
  now = Date.now(),
): SettingsOf<O> {
  const settings: Record<string, unknown> = {};
  for (const entry of options) {
    const value = raw.values[entry.name];
    const source = raw.sources[entry.name] ?? `--${entry.flag}`;
    settings[entry.name] =
      value === undefined ? (entry.type === 'list' ? [] : entry.default) : checked(entry, value, source, now);
  }
  return settings as SettingsOf<O>;
}

function checked(
  entry: OptionEntry,
  value: string | boolean | string[],
  source: string,
  now: number,
): unknown {
  if (entry.type === 'boolean') return value === true;
  if (entry.type === 'list') {
    const items = Array.isArray(value) ? value : [String(value)];
    // `--token ''` or `FROND_TOKEN=,` must not quietly mean "no token": that would leave a door open.
    if (items.some((item) => item.trim() === ''))
      throw usage(`${source} has an empty or blank value: give a value, or leave ${source} out`);
    return items;
  }
  const text = String(value);
  switch (entry.type) {
    case 'integer':
      return parseInteger(
        text,
        source,
        entry.min ?? Number.MIN_SAFE_INTEGER,
        entry.max === 'now' ? now : (entry.max ?? Number.MAX_SAFE_INTEGER),
      );
    case 'enum':
      if (!entry.values?.includes(text))
        throw usage(`${source} ${JSON.stringify(text)} is invalid: use ${inWords(entry.values ?? [])}`);
      return text;
    default:
      if (entry.maxLength !== undefined && text.length > entry.maxLength)
        throw usage(`${source} is longer than ${entry.maxLength} characters`);
      return text;
  }
}

/** `debug, info, warn or error`. */
export function inWords(values: readonly string[]): string {
  return values.length < 2 ? values.join('') : `${values.slice(0, -1).join(', ')} or ${values.at(-1)}`;
}

export function parseInteger(text: string, label: string, min: number, max: number): number {
  const n = /^-?[0-9]+$/.test(text.trim()) ? Number(text.trim()) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw usage(`${label} ${JSON.stringify(text)} is invalid: use an integer from ${min} to ${max}`);
  }
  return n;
}

/**
 * `--port -1`: node's parser takes `-1` for an option. A value that looks like a negative number
 * after an option that takes a value is joined to it (`--port=-1`; `-p -1` too), so the bounds check answers.
 */
function negativeValues(command: CommandSpec, args: string[]): string[] {
  const valued = new Map(
    command.options
      .filter((entry) => entry.type !== 'boolean')
      .flatMap((entry) => [
        [`--${entry.flag}`, `--${entry.flag}`],
        ...(entry.short === undefined ? [] : [[`-${entry.short}`, `--${entry.flag}`] as const]),
      ]) as [string, string][],
  );
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const next = args[i + 1];
    if (arg === '--') {
      out.push(...args.slice(i));
      break;
    }
    const long = valued.get(arg);
    if (long !== undefined && next !== undefined && /^-[0-9]/.test(next)) {
      out.push(`${long}=${next}`);
      i++;
    } else out.push(arg);
  }
  return out;
}

/** ` (did you mean --port?)` for the closest of `candidates` within a few edits; empty otherwise. */
export function didYouMean(word: string, candidates: readonly string[]): string {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const distance = editDistance(word.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  const allowed = Math.max(1, Math.min(3, Math.floor(word.replace(/^-+|^FROND_/, '').length / 3)));
  return best !== undefined && bestDistance <= allowed ? ` (did you mean ${best}?)` : '';
}

/** Levenshtein distance, with a swap of two neighbours counting as one edit (`--prot`, `--port`). */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) (rows[0] as number[])[j] = j;
  for (let i = 1; i <= a.length; i++) {
    const row = rows[i] as number[];
    const above = rows[i - 1] as number[];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(
        (above[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (above[j - 1] as number) + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        best = Math.min(best, ((rows[i - 2] as number[])[j - 2] as number) + 1);
      row[j] = best;
    }
  }
  return (rows[a.length] as number[])[b.length] as number;
}

/**
 * The value of a `*_FILE` variable: the file's text without its final line break (a list: one item
 * a line). The file's content is never shown, only its path and why it could not be read.
 */
function readSecretFile(variable: string, path: string, list: boolean): string | string[] {
  const text = readGivenFile(
    `${variable}=${JSON.stringify(path)}`,
    path,
    `a file holding the value of ${variable.replace(/_FILE$/, '')}`,
  ).toString('utf8');
  const value = text.replace(/\r?\n$/, '');
  // One token a line; a blank line is a blank token, which the start refuses (never "no token").
  return list ? value.split(/\r?\n/).map((line) => line.trim()) : value;
}
