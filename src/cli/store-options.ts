import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { FrondError } from '../core/errors.js';
import { openStoreFor, storeFailure } from '../server/start/store-open.js';
import type { OpenedStore } from '../stores/store-backend.js';
import { backendOf } from '../stores/store-registry.js';

interface StoreSettings {
  store: string | undefined;
  dataDir: string;
}

/** `--store`, or the embedded default `sqlite:<data-dir>/frond.db`. */
export function storeOf(settings: StoreSettings): string {
  return settings.store ?? `sqlite:${join(settings.dataDir, 'frond.db')}`;
}

/** The setting the store comes from, with its value as given and no password: `--data-dir ./data`. */
export function storeSettingOf(settings: StoreSettings): string {
  return settings.store === undefined
    ? `--data-dir ${settings.dataDir}`
    : `--store ${backendOf(settings.store).redact(settings.store)}`;
}

/**
 * The store a `tag`, `db` or `decode` command works on. An SQLite path is made absolute, so every
 * answer says which file it was, wherever the command ran.
 */
export interface CommandStore {
  /** The `--store` value to open. */
  spec: string;
  /** The SQLite file, absolute; undefined for a database server. */
  file: string | undefined;
  /** Where the store was named, for an error: `--store`, `FROND_DATA_DIR`, `the default --data-dir ./data`. */
  from: string;
  /** The setting with its value as given, for a store that cannot be opened: `--data-dir ./data`. */
  setting: string;
}

export function commandStore(settings: StoreSettings, sources: Record<string, string>): CommandStore {
  const spec = storeOf(settings);
  backendOf(spec); // an unsupported --store is refused before anything else
  const from =
    settings.store === undefined
      ? (sources.dataDir ?? `the default --data-dir ${settings.dataDir}`)
      : (sources.store ?? '--store');
  const path = spec.startsWith('sqlite:') ? spec.slice('sqlite:'.length) : '';
  // `sqlite:` alone is refused by the backend when it opens; `:memory:` is no file.
  if (path === '' || path === ':memory:')
    return { spec, file: undefined, from, setting: storeSettingOf(settings) };
  const file = resolve(path);
  return { spec: `sqlite:${file}`, file, from, setting: storeSettingOf(settings) };
}

/**
 * Opens the command's store, runs `use` and closes it. An SQLite file that does not exist is
 * refused unless `create` (only `frond db init` creates a store): a command run from another folder,
 * or with a mistyped `--data-dir`, would otherwise write to a new empty store the nodes never read.
 * With `readOnly`, a database server's store creates no table (`frond db check`). A failure names
 * the store it came from.
 */
export async function withStore<T>(
  choice: CommandStore,
  use: (store: OpenedStore) => Promise<T>,
  { create = false, readOnly = false }: { create?: boolean; readOnly?: boolean } = {},
): Promise<T> {
  if (!create && choice.file !== undefined && !existsSync(choice.file))
    throw new FrondError(
      'INVALID_CONFIG',
      `no store at sqlite:${choice.file} (${choice.from}): the file does not exist; pass --data-dir or --store to name the existing store, or create this one with 'frond db init'`,
    );
  const store = openStoreFor(choice.spec, choice.setting, { readOnly });
  try {
    return await use(store);
  } catch (error) {
    throw naming(storeFailure(error, choice.setting, choice.spec, 'use'), store.description, choice.file);
  } finally {
    await store.close();
  }
}

/** A failure with the store it came from, unless it names it already. */
function naming(error: unknown, description: string, file: string | undefined): unknown {
  if (!(error instanceof Error)) return error;
  if (error.message.includes(description) || (file !== undefined && error.message.includes(file)))
    return error;
  const message = `${error.message} (store ${description})`;
  return error instanceof FrondError
    ? new FrondError(error.code, message, { cause: error })
    : new FrondError('STORE_UNAVAILABLE', message, { cause: error });
}
