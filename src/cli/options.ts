import { parseArgs } from 'node:util';
import { FrondError } from '../core/errors.js';

export interface OptionSpec {
  type: 'string' | 'boolean';
  /** Also read from `FROND_<NAME>` (upper case, dashes as underscores). */
  env?: boolean;
  /** May be given several times (`--token a --token b`); the environment takes a comma list. */
  multiple?: boolean;
}

/** Lower-precedence values (a config file), with where each came from. */
export interface DefaultValues {
  values: Record<string, string | boolean>;
  sources: Record<string, string>;
}

export type OptionValues = Record<string, string | boolean | undefined>;

export interface ParsedCommand {
  values: OptionValues;
  positionals: string[];
  /** Where each value came from, for error messages: `--port` or `FROND_PORT`. */
  sources: Record<string, string>;
}

export function envName(option: string): string {
  return `FROND_${option.toUpperCase().replace(/-/g, '_')}`;
}

/**
 * Flags first, then `FROND_*` environment variables. Unknown flags and extra arguments are errors
 * with one line that says what to fix.
 */
export function parseCommand(
  command: string,
  args: string[],
  specs: Record<string, OptionSpec>,
  positionalNames: string[],
  env: NodeJS.ProcessEnv = process.env,
  defaults: DefaultValues[] = [],
  rejectUnknownEnv = false,
): ParsedCommand {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args,
      options: Object.fromEntries(
        Object.entries(specs).map(([name, spec]) => [
          name,
          { type: spec.type, multiple: spec.multiple === true },
        ]),
      ),
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const unknown = /Unknown option '([^']+)'/.exec(message);
    if (unknown) throw usage(`unknown option ${unknown[1]} for 'frond ${command}' (see 'frond help')`);
    throw usage(`${message.split('.')[0]} (frond ${command})`);
  }
  const values: OptionValues = {};
  const sources: Record<string, string> = {};
  for (const [name, spec] of Object.entries(specs)) {
    const flag = parsed.values[name];
    if (flag !== undefined) {
      values[name] = Array.isArray(flag) ? flag.join(',') : (flag as string | boolean);
      sources[name] = `--${name}`;
      continue;
    }
    const variable = envName(name);
    const text = spec.env === false ? undefined : env[variable];
    if (text !== undefined && text !== '') {
      sources[name] = variable;
      values[name] = spec.type === 'boolean' ? parseBoolean(variable, text) : text;
      continue;
    }
    // Config files, the first given winning over the next.
    for (const source of defaults) {
      const value = source.values[name];
      if (value === undefined) continue;
      values[name] = value;
      sources[name] = source.sources[name] ?? name;
      break;
    }
  }
  if (rejectUnknownEnv) {
    const known = new Set(
      Object.entries(specs)
        .filter(([, spec]) => spec.env !== false)
        .map(([name]) => envName(name)),
    );
    const unknown = Object.keys(env).find((key) => key.startsWith('FROND_') && !known.has(key));
    if (unknown !== undefined)
      throw usage(`unknown environment variable ${unknown} for 'frond ${command}' (see 'frond help')`);
  }
  if (parsed.positionals.length > positionalNames.length) {
    throw usage(
      `unexpected argument ${JSON.stringify(parsed.positionals[positionalNames.length])} for 'frond ${command}'`,
    );
  }
  const missing = positionalNames.slice(parsed.positionals.length).filter((name) => !name.endsWith('?'));
  if (missing.length > 0)
    throw usage(`'frond ${command}' needs ${missing.map((name) => `<${name}>`).join(' ')}`);
  return { values, positionals: parsed.positionals, sources };
}

function parseBoolean(variable: string, text: string): boolean {
  if (/^(1|true|yes|on)$/i.test(text)) return true;
  if (/^(0|false|no|off)$/i.test(text)) return false;
  throw usage(`${variable}=${JSON.stringify(text)} is not a boolean: use true or false`);
}

export function usage(message: string): FrondError {
  return new FrondError('INVALID_ARGUMENT', message);
}

/** An integer option within bounds, or a one-line error naming where it came from. */
export function integerOption(
  parsed: ParsedCommand,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const value = parsed.values[name];
  if (value === undefined || typeof value === 'boolean') return fallback;
  return parseInteger(value, parsed.sources[name] ?? `--${name}`, min, max);
}

export function parseInteger(text: string, label: string, min: number, max: number): number {
  const n = /^-?[0-9]+$/.test(text.trim()) ? Number(text.trim()) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw usage(`${label} ${JSON.stringify(text)} is invalid: use an integer from ${min} to ${max}`);
  }
  return n;
}

export function stringOption(parsed: ParsedCommand, name: string): string | undefined {
  const value = parsed.values[name];
  return typeof value === 'string' ? value : undefined;
}

/** A `multiple` option as a list (flags repeated, or a comma list in the environment or a file). */
export function listOption(parsed: ParsedCommand, name: string): string[] {
  const value = parsed.values[name];
  if (typeof value !== 'string') return [];
  return value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

export function booleanOption(parsed: ParsedCommand, name: string): boolean {
  return parsed.values[name] === true;
}
