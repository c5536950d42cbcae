import { randomUUID } from 'node:crypto';
import {
  closeSync,
  fstatSync,
  linkSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { FrondError } from '../../core/errors.js';
import { fileFailure } from '../../platform/data-file.js';
import { makeDirectory, unwritable } from '../../platform/directory.js';

export const LOCK_FILE = 'frond.pid';

/** Claims of a claim are taken this deep: each level is needed only after a crash inside the one below. */
const MAX_DEPTH = 3;
/** Tries per level; a try waits 1-5 ms when another process is in the middle of a take-over. */
const ROUNDS = 50;

/**
 * Two processes on one data dir would share a worker ID and hand out the same snowflake IDs, so a
 * node takes the dir with a pid file, `frond.pid` (`<pid>\n<nonce>\n`). It is released on close; a
 * file left by a process that is gone (a crash) is taken over by the next start.
 *
 * Reading a stale file and then removing it, as two steps, let two starts both take the dir (31 of
 * 60 synchronised runs): the second removed the first one's fresh file. So no file is ever removed
 * or replaced on what a process read earlier, except under a claim:
 *
 * 1. A file is never seen half written: the pid and a random nonce are written to a temporary file
 *    first, and `link()`ed to `frond.pid`, which fails with EEXIST if the name exists (atomic).
 * 2. A stale file F (its pid is not alive) is replaced only by the holder of the claim
 *    `frond.pid.takeover-<key of F>` (the nonce in F; its inode for a file without one), itself
 *    taken by this same procedure, one level deeper. Holding the claim, the process reads
 *    `frond.pid` again and replaces it by `rename()` (atomic; the name never goes missing) only if
 *    it is still F (same inode, same text); then it removes the claim.
 *
 * Why no two processes hold the dir: between that check and the rename, `frond.pid` cannot change.
 * A `link()` fails while it exists; a release removes only the releaser's own file (F's owner is
 * gone); a rename is done only under the claim for the file then in place, F's, which this process
 * holds: everyone who replaces F computes the same key from F. A process that read F earlier and
 * gets the claim after it was freed finds another file in place and replaces nothing. A claim
 * left by a crash (its pid gone) is taken over the same way, with a claim of the claim (up to
 * MAX_DEPTH levels). Every loop is bounded (ROUNDS tries per level).
 *
 * As before, a pid is alive by `kill(pid, 0)`, and a file with this process's own pid is stale
 * (a container restarted with the same pid): processes sharing a data dir across pid namespaces
 * are not told apart.
 */
export function lockDataDir(dir: string): () => void {
  makeDirectory(dir, '--data-dir');
  try {
    return takeDataDir(dir);
  } catch (error) {
    // EACCES, EROFS, ENOSPC when writing the lock's files: the directory's, one line naming
    // --data-dir, not the syscall (a lock file there that cannot be read is named by `look`).
    throw error instanceof FrondError ? error : unwritable('--data-dir', dir, error);
  }
}

function takeDataDir(dir: string): () => void {
  const path = join(dir, LOCK_FILE);
  const nonce = randomUUID();
  const mine = `${process.pid}\n${nonce}\n`;
  const temporary = join(dir, `${LOCK_FILE}.${process.pid}.${nonce}.tmp`);
  writeFileSync(temporary, mine, { flag: 'wx' });
  const lock = new Lock(temporary, mine, `--data-dir ${dir}`);
  try {
    const holder = lock.acquire(path, 0);
    if (holder !== undefined) {
      throw new FrondError(
        'INVALID_CONFIG',
        `data dir ${dir} is in use by process ${holder}; give each node its own --data-dir (or delete ${path} if that process is not frond)`,
      );
    }
  } finally {
    rmSync(temporary, { force: true });
  }
  removeLeftovers(dir, `--data-dir ${dir}`);
  return () => lock.release(path);
}

/** A file's text and identity, read through one descriptor; undefined if there is none. */
interface Seen {
  text: string;
  dev: number;
  ino: number;
}

class Lock {
  private spares = 0;

  constructor(
    /** A file holding `mine`, linked or renamed to every name this process takes. */
    private readonly temporary: string,
    private readonly mine: string,
    /** `--data-dir DIR`, for a file of the lock that cannot be read. */
    private readonly setting: string,
  ) {}

  /** Takes `name` (undefined), or answers the live pid that holds it. */
  acquire(name: string, depth: number): number | undefined {
    for (let round = 0; round < ROUNDS; round++) {
      if (linkIfAbsent(this.temporary, name)) return undefined;
      const seen = look(name, this.setting);
      // Released (or replaced) meanwhile: try again.
      if (seen === undefined) continue;
      const holder = pidIn(seen.text);
      if (holder !== undefined && isAlive(holder)) return holder;
      if (depth >= MAX_DEPTH) {
        throw new FrondError(
          'INVALID_CONFIG',
          `cannot take over ${name}: starts that took it over crashed ${MAX_DEPTH} times in a row; delete ${name}* files if no frond process uses the data dir`,
        );
      }
      const claim = `${name}.takeover-${keyOf(seen)}`;
      // Another process is taking it over this very moment: what it puts in place is read next round.
      if (this.acquire(claim, depth + 1) !== undefined) {
        pause();
        continue;
      }
      try {
        const now = look(name, this.setting);
        if (now !== undefined && same(now, seen)) {
          this.replace(name);
          return undefined;
        }
      } finally {
        this.release(claim);
      }
    }
    throw new FrondError(
      'INVALID_CONFIG',
      `cannot lock ${name}: other starts kept taking it over; start again (one node per --data-dir)`,
    );
  }

  /** Removes `name` if it is this process's (a file taken over from it stays). */
  release(name: string): void {
    const now = look(name, this.setting);
    if (now?.text !== this.mine) return;
    try {
      unlinkSync(name);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }

  /** `name` becomes this process's file in one step: a spare link of the temporary renamed onto it. */
  private replace(name: string): void {
    const spare = this.temporary.replace(/\.tmp$/, `.${++this.spares}.tmp`);
    linkSync(this.temporary, spare);
    try {
      renameSync(spare, name);
    } catch (error) {
      rmSync(spare, { force: true });
      throw error;
    }
  }
}

function linkIfAbsent(from: string, to: string): boolean {
  try {
    linkSync(from, to);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

/**
 * A file of the lock, or undefined if there is none. One that cannot be read (its mode, another
 * owner, a directory at its name) is named in the error, with `setting`: the read through a
 * descriptor fails without a path (`EISDIR: illegal operation on a directory, read`).
 */
function look(path: string, setting: string): Seen | undefined {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw fileFailure(setting, path, 'read', error);
  }
  try {
    const { dev, ino } = fstatSync(fd);
    return { text: readFileSync(fd, 'utf8'), dev, ino };
  } catch (error) {
    throw fileFailure(setting, path, 'read', error);
  } finally {
    closeSync(fd);
  }
}

function same(a: Seen, b: Seen): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.text === b.text;
}

/** The claim's name for a file: its nonce, or (a file written by an older frond, or damaged) its inode. */
function keyOf(seen: Seen): string {
  const nonce = seen.text.split('\n')[1] ?? '';
  return /^[0-9a-f-]{36}$/.test(nonce) ? nonce : `inode-${seen.dev}-${seen.ino}`;
}

/** The pid in a lock file's first line; undefined (stale) if there is none, or it is this process's. */
function pidIn(text: string): number | undefined {
  const pid = Number.parseInt(text, 10);
  return Number.isInteger(pid) && pid > 0 && pid !== process.pid ? pid : undefined;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));
function pause(): void {
  Atomics.wait(sleeper, 0, 0, 1 + Math.floor(Math.random() * 5));
}

/**
 * What starts that crashed while taking the dir left: temporary files (their pid is gone), and
 * claims `<name>.takeover-<key>` for a file that is no longer at `<name>` (the crash came after the
 * rename). Such a claim guards nothing: the file it was for never comes back (its nonce, or inode,
 * was unique), and a process that takes it anyway finds another file in place and replaces nothing.
 * A claim for the file still in place stays: it is taken over with the file.
 */
function removeLeftovers(dir: string, setting: string): void {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const temporary = /^frond\.pid\.([0-9]+)\.[0-9a-f-]{36}(\.[0-9]+)?\.tmp$/.exec(name);
    if (temporary !== null) {
      const pid = Number(temporary[1]);
      if (pid !== process.pid && !isAlive(pid)) rmSync(path, { force: true });
      continue;
    }
    const claim = /^(frond\.pid(?:\.takeover-[^.]+)*)\.takeover-([^.]+)$/.exec(name);
    if (claim === null) continue;
    const held = look(path, setting);
    if (held === undefined || pidIn(held.text) === undefined || isAlive(pidIn(held.text) as number)) continue;
    const guarded = look(join(dir, claim[1] as string), setting);
    if (guarded === undefined || keyOf(guarded) !== claim[2]) rmSync(path, { force: true });
  }
}
