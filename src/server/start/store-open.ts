import { FrondError } from '../../core/errors.js';
import type { OpenedStore, OpenStoreOptions } from '../../stores/store-backend.js';
import { openStore } from '../../stores/store-registry.js';

/** SQLite's answers that say the path or its permissions are wrong: the command must change (exit 2). */
const SQLITE_SETTING_CODES = /^SQLITE_(CANTOPEN|NOTADB|CORRUPT|READONLY|PERM|AUTH)/;

/**
 * Opens the store a `--store` value names. What the database library throws when it cannot (an
 * SQLite path that is a directory, a file that is not a database) becomes one line naming the
 * setting and the file: `--data-dir ./data: cannot open /srv/data/frond.db (unable to open
 * database file, SQLITE_CANTOPEN); …`. `setting` is where the value came from, with its value as
 * given (`--data-dir ./data`, `--store sqlite:ids.db`), the password left out.
 */
export function openStoreFor(spec: string, setting: string, options: OpenStoreOptions = {}): OpenedStore {
  try {
    return openStore(spec, options);
  } catch (error) {
    throw storeFailure(error, setting, spec, 'open');
  }
}

/**
 * An SQLite error in one line naming the setting and the file: a wrong path or permission is
 * INVALID_CONFIG (exit 2: give another path, or fix the file's owner), anything else
 * STORE_UNAVAILABLE (exit 1: the same command may work later). Any other error is returned as it
 * is: a FrondError is already one line, and a database server's errors are its store's to word.
 */
export function storeFailure(error: unknown, setting: string, spec: string, when: 'open' | 'use'): unknown {
  if (error instanceof FrondError || !(error instanceof Error) || !spec.startsWith('sqlite:')) return error;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string' || !code.startsWith('SQLITE_')) return error;
  const file = spec.slice('sqlite:'.length);
  const readOnly = code.startsWith('SQLITE_READONLY');
  const verb = readOnly ? 'write' : when;
  const what = `${setting}: cannot ${verb} ${file} (${error.message}, ${code})`;
  if (!SQLITE_SETTING_CODES.test(code)) return new FrondError('STORE_UNAVAILABLE', what, { cause: error });
  const fix = readOnly
    ? 'give a file this user can write'
    : /^SQLITE_(NOTADB|CORRUPT)/.test(code)
      ? "it is not frond's SQLite database: give the path of that"
      : 'give a file this user can read and write, in a directory it can write';
  return new FrondError('INVALID_CONFIG', `${what}; ${fix}`, { cause: error });
}
