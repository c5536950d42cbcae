import { join } from 'node:path';

/** `--store`, or the embedded default `sqlite:<data-dir>/frond.db`. */
export function storeOf(settings: { store: string | undefined; dataDir: string }): string {
  return settings.store ?? `sqlite:${join(settings.dataDir, 'frond.db')}`;
}
