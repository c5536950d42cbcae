import { mkdir, open, rename } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Writes `value` as JSON to a temporary file, syncs it, and renames it over `path`: a crash leaves
 * the old file or the new one, never half of one. The worker-ID files depend on it, since a torn
 * file would lose the last timestamp a restart must stay above.
 */
export async function writeJsonAtomically(path: string, value: unknown): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temporary = `${path}.tmp`;
  const handle = await open(temporary, 'w');
  try {
    await handle.writeFile(`${JSON.stringify(value)}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temporary, path);
}
