import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type FrondProcess, runFrond, startFrond, tempDir } from '../../../../test/support/frond-process.js';

export type { FrondProcess };
export { tempDir };

/** A SQLite file that several `frond serve` processes share, so their segment ranges never overlap. */
export function sharedStore(): string {
  const file = join(tempDir('frond-client-db-'), 'frond.db');
  // The tag commands never make a store (`frond db init` does): an empty file is an empty SQLite
  // database, which the first command to open it fills with the tables.
  writeFileSync(file, '');
  return `sqlite:${file}`;
}

/** `frond tag add TAG --store STORE --step STEP` (a small step makes the servers load often). */
export async function addTag(store: string, tag: string, step = 100): Promise<void> {
  const result = await runFrond(['tag', 'add', tag, '--store', store, '--step', String(step)]);
  if (result.code !== 0) throw new Error(`frond tag add ${tag} failed: ${result.stderr}${result.stdout}`);
}

/** `frond serve` on a free port of 127.0.0.1, over `store`, with its own data dir and worker ID. */
export function serve(store: string, workerId: number): Promise<FrondProcess> {
  return startFrond([
    '--port',
    '0',
    '--data-dir',
    tempDir(),
    '--store',
    store,
    '--worker-id',
    String(workerId),
  ]);
}

/** Fails with the duplicates when an ID occurs twice. */
export function duplicatesOf(ids: Iterable<bigint | string | number>): string[] {
  const seen = new Set<string>();
  const duplicates: string[] = [];
  for (const id of ids) {
    const key = String(id);
    if (seen.has(key)) duplicates.push(key);
    seen.add(key);
  }
  return duplicates;
}
