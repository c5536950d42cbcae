import { join } from 'node:path';
import type { OptionSpec, ParsedCommand } from './options.js';
import { stringOption } from './options.js';

export const DEFAULT_DATA_DIR = './data';

export const STORE_OPTIONS: Record<string, OptionSpec> = {
  store: { type: 'string' },
  'data-dir': { type: 'string' },
};

export function dataDirOf(parsed: ParsedCommand): string {
  return stringOption(parsed, 'data-dir') ?? DEFAULT_DATA_DIR;
}

/** `--store`, or the embedded default `sqlite:<data-dir>/frond.db`. */
export function storeOf(parsed: ParsedCommand): string {
  return stringOption(parsed, 'store') ?? `sqlite:${join(dataDirOf(parsed), 'frond.db')}`;
}
