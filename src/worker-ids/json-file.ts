import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { open, readdir, readFile, rename, unlink } from 'node:fs/promises';
import { devNull } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileFailure } from '../platform/data-file.js';
import { makeDirectory } from '../platform/directory.js';

/**
 * One file descriptor held open for the record file: if the process runs out of descriptors
 * (EMFILE, too many connections), the record closes it and writes in its place, so the snowflake
 * node never withholds IDs for want of a descriptor. Taken by `reserveDescriptor`.
 */
let reserve: number | undefined;

/** Holds one descriptor in reserve for `writeJsonAtomically` (once per process; safe to call again). */
export function reserveDescriptor(): void {
  reserve ??= openSync(devNull, 'r');
}

/** `<path>.<16 hex digits>.tmp`: a name nobody can plant a file or a symlink at in advance. */
function temporaryPath(path: string): string {
  return `${path}.${randomBytes(8).toString('hex')}.tmp`;
}

function outOfDescriptors(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'EMFILE' || code === 'ENFILE';
}

/**
 * Writes `value` as JSON to a temporary file, syncs it, renames it over `path` and syncs the
 * folder: a crash or a power cut leaves the old file or the new one, never half of one, and the
 * rename itself survives (without the folder's fsync, ext4 and xfs may forget it). The worker-ID
 * files depend on it, since a torn or lost file would lose the last timestamp a restart must stay
 * above. The temporary file has a random name and is created exclusively (`wx`), so a file or
 * symlink planted next to `path` is never followed or overwritten. Out of file descriptors, it
 * writes once more with the one in reserve (`reserveDescriptor`).
 */
export async function writeJsonAtomically(path: string, value: unknown): Promise<void> {
  makeDirectory(dirname(path), '--data-dir');
  const text = `${JSON.stringify(value)}\n`;
  try {
    await write(path, text);
  } catch (error) {
    if (!outOfDescriptors(error) || reserve === undefined) throw error;
    writeWithReserve(path, text);
  }
}

async function write(path: string, text: string): Promise<void> {
  const temporary = temporaryPath(path);
  const handle = await open(temporary, 'wx', 0o644);
  try {
    try {
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, path);
  } catch (error) {
    await unlink(temporary).catch(() => {});
    throw error;
  }
  const folder = await open(dirname(path), 'r');
  try {
    await folder.sync();
  } finally {
    await folder.close();
  }
}

/**
 * The same steps, synchronously, with the reserved descriptor freed first: nothing else on the
 * event loop can take it in between. Blocks for an fsync or two, only when descriptors ran out.
 */
function writeWithReserve(path: string, text: string): void {
  if (reserve !== undefined) closeSync(reserve);
  reserve = undefined;
  try {
    const temporary = temporaryPath(path);
    const fd = openSync(temporary, 'wx', 0o644);
    try {
      try {
        writeSync(fd, text);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(temporary, path);
    } catch (error) {
      try {
        unlinkSync(temporary);
      } catch {}
      throw error;
    }
    const folder = openSync(dirname(path), 'r');
    try {
      fsyncSync(folder);
    } finally {
      closeSync(folder);
    }
  } finally {
    try {
      reserve = openSync(devNull, 'r');
    } catch {
      // Taken again at the next write that finds a descriptor free.
    }
  }
}

/**
 * Deletes temporary files a crash left next to `path` (`<name>.<hex>.tmp`, and the fixed
 * `<name>.tmp` of older versions). Unlinking a symlink removes the link, never its target.
 */
export async function removeTemporaries(path: string): Promise<void> {
  const name = basename(path);
  let entries: string[];
  try {
    entries = await readdir(dirname(path));
  } catch {
    return;
  }
  const leftover = new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(\\.[0-9a-f]{16})?\\.tmp$`);
  for (const entry of entries) {
    if (leftover.test(entry)) await unlink(join(dirname(path), entry)).catch(() => {});
  }
}

/**
 * Reads a JSON file: `undefined` when there is none, `{ value }` otherwise, where `value` is
 * `undefined` if the text does not parse (the caller says how to repair its file). Its callers keep
 * the file in the data dir itself, so a file that cannot be read (its mode, a directory at its
 * name) is one line naming `--data-dir` and the file.
 */
export async function readJsonFile(path: string): Promise<{ value: unknown } | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw fileFailure(`--data-dir ${dirname(path)}`, path, 'read', error);
  }
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return { value: undefined };
  }
}
