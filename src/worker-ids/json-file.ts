import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Writes `value` as JSON to a temporary file, syncs it, renames it over `path` and syncs the
 * folder: a crash or a power cut leaves the old file or the new one, never half of one, and the
 * rename itself survives (without the folder's fsync, ext4 and xfs may forget it). The worker-ID
 * files depend on it, since a torn or lost file would lose the last timestamp a restart must stay
 * above.
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
  const folder = await open(dirname(path), 'r');
  try {
    await folder.sync();
  } finally {
    await folder.close();
  }
}

/**
 * Reads a JSON file: `undefined` when there is none, `{ value }` otherwise, where `value` is
 * `undefined` if the text does not parse (the caller says how to repair its file).
 */
export async function readJsonFile(path: string): Promise<{ value: unknown } | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return { value: undefined };
  }
}
