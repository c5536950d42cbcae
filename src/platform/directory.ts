import { mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { FrondError } from '../core/errors.js';

/** Deeper than any real path; the walk up is bounded so a strange file system cannot spin it. */
const MAX_DEPTH = 256;

/**
 * Creates `path` and its missing parents, or fails in one line naming `what` (the setting the path
 * came from). Not `mkdirSync(path, { recursive: true })`: on Node 20 that never returns where a
 * parent answers ENOENT to mkdir, as /proc does (`--data-dir /proc/frond-data` spun a core forever
 * and ignored SIGTERM, since the loop is synchronous).
 */
export function makeDirectory(path: string, what: string): void {
  const missing: string[] = [];
  let at = resolve(path);
  for (let depth = 0; depth < MAX_DEPTH; depth++) {
    let found: boolean;
    try {
      found = statSync(at).isDirectory();
      if (!found) throw failure(what, path, at, 'ENOTDIR', 'is a file, not a directory');
    } catch (error) {
      if (error instanceof FrondError) throw error;
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') throw failure(what, path, at, code, describe(code));
      found = false;
    }
    if (found) break;
    missing.push(at);
    const parent = dirname(at);
    if (parent === at) break;
    at = parent;
  }
  for (const dir of missing.reverse()) {
    try {
      mkdirSync(dir);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') continue;
      throw failure(what, path, dir, code, describe(code));
    }
  }
}

/**
 * A directory that exists but cannot be written (its owner is another user, the file system is
 * read-only or full), in one line naming `what` (the setting the path came from).
 */
export function unwritable(what: string, path: string, error: unknown): FrondError {
  const code = (error as NodeJS.ErrnoException).code;
  const reason = describe(code);
  return new FrondError(
    'INVALID_CONFIG',
    `${what} ${path}: cannot write in it (${reason}${code !== undefined && reason !== code ? `, ${code}` : ''}); give a directory this user can write`,
    { cause: error },
  );
}

function describe(code: string | undefined): string {
  switch (code) {
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'ENOENT':
      return 'this file system does not let a directory be made there';
    case 'ENOTDIR':
      return 'a part of it is a file, not a directory';
    case 'EROFS':
      return 'the file system is read-only';
    case 'ENOSPC':
      return 'the disk is full';
    default:
      return code ?? 'unknown error';
  }
}

function failure(
  what: string,
  path: string,
  at: string,
  code: string | undefined,
  reason: string,
): FrondError {
  return new FrondError(
    'INVALID_CONFIG',
    `${what} ${path}: cannot create ${at} (${reason}${code !== undefined && reason !== code ? `, ${code}` : ''}); give a directory this user can write`,
  );
}
