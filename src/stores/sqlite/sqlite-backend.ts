import { FrondError } from '../../core/errors.js';
import type { StoreBackend } from '../store-backend.js';
import { SQLITE_TABLES_DDL } from './sqlite-database.js';
import { SqliteSegmentStore } from './sqlite-segment-store.js';

/** `sqlite:PATH`: the embedded default, one file on this machine (no password to hide). */
export const sqliteBackend: StoreBackend<string> = {
  name: 'sqlite',
  prefixes: ['sqlite:'],
  usage: 'sqlite:PATH',
  ddl: SQLITE_TABLES_DDL.join(';\n\n'),
  redact: (spec) => spec,
  parse(spec) {
    const path = spec.slice('sqlite:'.length);
    if (path === '')
      throw new FrondError('INVALID_CONFIG', '--store sqlite: needs a path, e.g. sqlite:./data/frond.db');
    return path;
  },
  open: (path) => new SqliteSegmentStore(path),
};
