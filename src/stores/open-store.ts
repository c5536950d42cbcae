import { FrondError } from '../core/errors.js';
import type { SegmentStore } from '../core/segment-store.js';
import { SqliteSegmentStore } from './sqlite/sqlite-segment-store.js';

/** Opens the store a `--store` value names: `sqlite:PATH` for now. */
export function openStore(spec: string): SegmentStore {
  if (spec.startsWith('sqlite:')) {
    const path = spec.slice('sqlite:'.length);
    if (path === '')
      throw new FrondError('INVALID_CONFIG', '--store sqlite: needs a path, e.g. sqlite:./data/frond.db');
    return new SqliteSegmentStore(path);
  }
  throw new FrondError('INVALID_CONFIG', `unsupported --store ${JSON.stringify(spec)}: use sqlite:PATH`);
}
