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
  const code = (error as NodeJS.ErrnoException).code;
  const { reason, fix } = wording(code);
  return new FrondError(
    'INVALID_CONFIG',
    `${setting}: cannot ${verb} ${path} (${reason}${code === undefined || code === reason ? '' : `, ${code}`}); ${fix}`,
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

function wording(code: string | undefined): { reason: string; fix: string } {
  switch (code) {
    case 'EACCES':
    case 'EPERM':
      return {
        reason: 'permission denied',
        fix: 'give this user read and write access to it, or start frond as the user that owns it',
      };
    case 'EISDIR':
      return { reason: 'it is a directory', fix: 'move it away: frond keeps a file of its own at that path' };
    case 'ENOTDIR':
      return {
        reason: 'a part of its path is a file, not a directory',
        fix: 'give a directory this user can write',
      };
    case 'ELOOP':
      return { reason: 'too many symbolic links', fix: 'make it a plain file, or move it away' };
    case 'EROFS':
      return {
        reason: 'the file system is read-only',
        fix: 'give a directory on a file system frond can write',
      };
    case 'ENOSPC':
      return { reason: 'the disk is full', fix: 'free some space, or give a directory on another disk' };
    case 'EIO':
      return { reason: 'an input/output error', fix: 'check the disk, or give a directory on another one' };
    default:
      return { reason: code ?? 'unknown error', fix: 'check the file and its directory' };
  }
}
