import { readFileSync } from 'node:fs';
import { FrondError } from '../core/errors.js';

/**
 * A file frond keeps in a directory a setting names (the data dir's lock, worker-ID record,
 * high-water and its journal) that cannot be opened, read or written, in one line naming the
 * setting and the file: `--data-dir /srv/frond: cannot read /srv/frond/snowflake-worker.json
 * (permission denied, EACCES); give this user read and write access to it, or start frond as the
 * user that owns it`. Never the system's own text (`EACCES: permission denied, open '…'`, or
 * `EISDIR: illegal operation on a directory, read`, which names no file at all). INVALID_CONFIG
 * (exit 2), as for a data dir that cannot be written: the files, their owner or the setting must
 * change before the same start can work. A FrondError is returned as it is (already one line).
 * `setting` is the setting with its value as given: `--data-dir ./data`.
 */
export function fileFailure(
  setting: string,
  path: string,
  verb: 'open' | 'read' | 'write',
  error: unknown,
): FrondError {
  if (error instanceof FrondError) return error;
  const code = codeOf(error);
  const reason = reasonOf(code);
  return new FrondError(
    'INVALID_CONFIG',
    `${setting}: cannot ${verb} ${path} (${reason}${code === undefined || code === reason ? '' : `, ${code}`}); ${keptFix(code)}`,
    { cause: error },
  );
}

/** Runs `step` on `path`; what it throws is worded by `fileFailure`. */
export function onFile<T>(setting: string, path: string, verb: 'open' | 'read' | 'write', step: () => T): T {
  try {
    return step();
  } catch (error) {
    throw fileFailure(setting, path, verb, error);
  }
}

/**
 * A file a setting names for frond to read (`--tls-key key.pem`, `--config frond.json`,
 * `FROND_STORE_FILE`, a store URL's `sslrootcert`) that cannot be read, in one line naming the
 * setting with its path, why in words, and what to give: `--tls-key /nope: no such file; give the
 * path of the PEM private key`, `--config /tmp: it is a directory (EISDIR); give the path of …`.
 * Never the system's own text. INVALID_CONFIG (exit 2): the setting or the file must change. A
 * FrondError is returned as it is. `setting` is the setting with the path as given (`--tls-key
 * key.pem`, `FROND_STORE_FILE=/run/secrets/store`); `what` is what the file should be (`the PEM
 * private key`).
 */
export function givenFileFailure(setting: string, what: string, error: unknown): FrondError {
  if (error instanceof FrondError) return error;
  const code = codeOf(error);
  const reason = reasonOf(code);
  // "no such file" says it all; any other reason keeps its code, to search for.
  const shown = code === undefined || code === reason || code === 'ENOENT' ? reason : `${reason} (${code})`;
  return new FrondError('INVALID_CONFIG', `${setting}: ${shown}; ${givenFix(code, what)}`, {
    cause: error,
  });
}

/** The bytes of the file `path` a setting names; what goes wrong is worded by `givenFileFailure`. */
export function readGivenFile(setting: string, path: string, what: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw givenFileFailure(setting, what, error);
  }
}

function codeOf(error: unknown): string | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** The reason of a system error code, in words; an unknown code as it is. */
function reasonOf(code: string | undefined): string {
  switch (code) {
    case 'ENOENT':
      return 'no such file';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'it is a directory';
    case 'ENOTDIR':
      return 'a part of its path is a file, not a directory';
    case 'ELOOP':
      return 'too many symbolic links';
    case 'EROFS':
      return 'the file system is read-only';
    case 'ENOSPC':
      return 'the disk is full';
    case 'EIO':
      return 'an input/output error';
    default:
      return code ?? 'unknown error';
  }
}

/** What to do about a file frond keeps. */
function keptFix(code: string | undefined): string {
  switch (code) {
    case 'EACCES':
    case 'EPERM':
      return 'give this user read and write access to it, or start frond as the user that owns it';
    case 'EISDIR':
      return 'move it away: frond keeps a file of its own at that path';
    case 'ENOTDIR':
      return 'give a directory this user can write';
    case 'ELOOP':
      return 'make it a plain file, or move it away';
    case 'EROFS':
      return 'give a directory on a file system frond can write';
    case 'ENOSPC':
      return 'free some space, or give a directory on another disk';
    case 'EIO':
      return 'check the disk, or give a directory on another one';
    default:
      return 'check the file and its directory';
  }
}

/** What to do about a file a setting names. */
function givenFix(code: string | undefined, what: string): string {
  switch (code) {
    case 'EACCES':
    case 'EPERM':
      return 'give this user read access to it, or start frond as a user that may read it';
    case 'EIO':
      return 'check the disk, or give a copy of it on another one';
    default:
      return `give the path of ${what}`;
  }
}
