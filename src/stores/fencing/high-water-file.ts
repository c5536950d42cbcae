import { closeSync, fsyncSync, ftruncateSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { FrondError } from '../../core/errors.js';
import { onFile } from '../../platform/data-file.js';
import { makeDirectory } from '../../platform/directory.js';

/** What a node remembers of one database, across restarts. */
export interface HighWater {
  /** The newest fence epoch seen, and the database identity it was seen on. */
  epoch: number;
  identity: string | undefined;
  /** Per tag, the highest max_id this node was ever granted. */
  tags: Map<string, bigint>;
  /**
   * Per tag, the kind (`kindKey`: `''` plain, `opaque …`) of the last segment this node was granted:
   * a tag keeps its kind for good once it served IDs, so a grant of another kind means its rows in
   * frond's tables were changed by hand (FencedStore refuses it). Absent for records of older versions.
   */
  kinds: Map<string, string>;
  /**
   * Per tag, the last grants (at most `HELD_GRANTS`, `[start, end)`, ascending) this process was
   * given and has not accounted for since: a clean stop hands them back or records them as gaps,
   * then releases them. Whatever is still here at the next open was held when the process died
   * (SIGKILL, a crash, a database that did not answer at the stop): `crash` gaps. This process's
   * own record only; another process of the node reports its own.
   */
  held: Map<string, HeldGrant[]>;
}

/** One grant `[start, end)` a process held (`HighWater.held`). */
export interface HeldGrant {
  start: bigint;
  end: bigint;
}

/**
 * Grants kept per tag for the crash report: what a buffer holds is its current segment and the next
 * (two grants); an older one was used up before the next after it was loaded.
 */
const HELD_GRANTS = 2;

interface FileShape {
  version: 1;
  stores: Record<string, StoreShape>;
}

interface StoreShape {
  epoch: number;
  identity?: string;
  tags: Record<string, string>;
  kinds?: Record<string, string>;
  /**
   * `HighWater.held`, each grant as `"start:end:prev"`: `prev` is this process's own record before
   * the grant (the end of its grant before), which a hand-back of the whole grant goes down to.
   */
  held?: Record<string, string[]>;
}

export const HIGH_WATER_FILE = 'segment-high-water.json';
/** Beside it: what changed since the file was last written whole, one JSON line per change. */
export const HIGH_WATER_JOURNAL = 'segment-high-water.log';
/** The journal is folded into the file once it holds this many lines, or 4 per tag if more. */
const COMPACT_AFTER_LINES = 4_096;
/**
 * The data dir of process i of `frond serve --workers N` is `<data-dir>/worker-<i>`
 * (`workerDataDir` in src/server/cluster/cluster.ts; a test keeps the two in step).
 */
const WORKER_DIR = /^worker-[0-9]+$/;

/**
 * One change: a store's epoch (and identity) seen, and a tag's max_id when a segment was granted
 * (with `start`, the grant's first ID, it is also held: `HighWater.held`). A hand-back writes
 * `set` with `was`: the tag's record goes down to `set` if it is `was` (the max_id of this
 * process's last grant, whose unused tail went back), so its next grant, starting at `set`, is no
 * sign of a database that went back. `release`: the tag's held grants ending at or below it are
 * accounted for (handed back, or recorded as gaps). A version without these fields ignores them:
 * the record stays higher, which costs a fence, never an ID twice.
 */
interface JournalLine {
  store: string;
  epoch: number;
  identity?: string;
  tag?: string;
  max?: string;
  kind?: string;
  start?: string;
  set?: string;
  was?: string;
  release?: string;
}

/**
 * How every journal line begins: `JSON.stringify` writes `store` first. Inside a JSON string a quote
 * is written `\"`, so these 9 characters occur in a line only at its start; the start of the next
 * record is found by them in a line that an append continued after a torn one (see `recover`).
 */
const RECORD_START = '{"store":';

/** The two file operations the journal needs; tests pass failing ones to play a full disk. */
export interface JournalIo {
  /** Appends `text` at the end of `path` (creating it) and fsyncs it; may leave part of it on failure. */
  append(path: string, text: string): Promise<void>;
  /** Cuts `path` to `length` bytes and fsyncs it. */
  truncate(path: string, length: number): Promise<void>;
}

const fileIo: JournalIo = {
  async append(path, text) {
    const handle = await open(path, 'a');
    try {
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
  },
  async truncate(path, length) {
    const handle = await open(path, 'r+');
    try {
      // Never longer: a journal already shorter has no fragment at its end, and zeros added by
      // extending it would make an unreadable line.
      if ((await handle.stat()).size > length) await handle.truncate(length);
      await handle.sync();
    } finally {
      await handle.close();
    }
  },
};

export interface HighWaterOptions {
  /**
   * The node's data dir when this process keeps its own below it (`--workers`): what every
   * process of the node was granted is read from there at open. By default the parent of a data
   * dir named `worker-<i>`, else the data dir itself (whose `worker-*` dirs are read too).
   */
  nodeDir?: string;
  io?: JournalIo;
  /**
   * Other scopes in the same files whose tags (not epochs) are folded in: the one SQLite file of a
   * data dir spelled another way by an older version (`sqlite:data/frond.db`, relative to where it
   * was started). Folding in too much only raises a floor (a gap), never lowers one.
   */
  alsoTagsOf?: (scope: string) => boolean;
}

/**
 * `<data-dir>/segment-high-water.json` and its journal `segment-high-water.log`: per store, the
 * highest max_id this node was granted per tag and the newest fence epoch it saw. A change is one
 * line appended to the journal and fsynced after every segment load and before the segment is
 * served, so a node restarted after its database went back still knows where it was. Writing the
 * whole file every time cost O(tags) on the event loop per load: 100 ms at 50,000 tags and 12-17 ms
 * at 10,000 on a loaded 2-core machine, for every segment load. The journal is folded into the file
 * (a temporary file, fsync, rename, fsync of the directory, then the journal emptied) once it is
 * longer than 4 lines per tag, so that cost is paid once per thousands of loads. Replaying a line
 * twice changes nothing (every value only goes up), so a crash between the rename and the emptying
 * is harmless. Writes are serialized; one write covers every change made before it started.
 *
 * A torn append (a full disk: ENOSPC after part of the text was written, or a failed fsync) is
 * undone: the journal's length after the last append that was fsynced whole is kept, and the
 * journal is cut back to it before the lines are tried again; if the cut fails too, the next write
 * cuts first and appends nothing until that works. A record is acknowledged (its segment served)
 * only once the whole line and its newline were fsynced, so any text that is not a whole valid line
 * was never acknowledged; `recover` drops such a fragment at replay when a crash came before the
 * cut, keeping every whole line.
 *
 * With `--workers N` each process keeps its own files in `<data-dir>/worker-<i>`, but the node is
 * one: at open the record is the maximum over this process's files, the node dir's and every other
 * `worker-*` dir's (read only: each process writes only its own). A process that opens after a
 * database went back so knows what any process of the node was granted before it opened.
 */
export class HighWaterFile {
  readonly path: string;
  private readonly journalPath: string;
  private readonly file: FileShape;
  private readonly mine: HighWater;
  private readonly io: JournalIo;
  /** The other processes' files of the node that could not be read, and why (they were left out). */
  readonly unreadable: string[] = [];
  private chain: Promise<void> = Promise.resolve();
  private queued: Promise<void> | undefined;
  /** Lines not yet in the journal. */
  private pending: string[] = [];
  private journalLines: number;
  /** The journal's length in bytes after the last append fsynced whole (or the last cut). */
  private journalBytes: number;
  /** An append failed and the journal could not be cut back yet: it may end in a fragment. */
  private torn = false;
  /** Whether the journal's directory entry is known to be on disk. */
  private journalDurable: boolean;

  constructor(
    dataDir: string,
    /** The store this node uses, without host and password (a failover changes the host). */
    private readonly scope: string,
    options: HighWaterOptions = {},
  ) {
    this.io = options.io ?? fileIo;
    this.path = join(dataDir, HIGH_WATER_FILE);
    this.journalPath = join(dataDir, HIGH_WATER_JOURNAL);
    // The journal before the file: see `readSibling` (for this process's own files, which no one
    // else writes, the order does not matter). The journal is opened for writing too: one this
    // process may read but not append to would fail every segment load of a node that started.
    // A file that cannot be opened or read stops the start in one line naming it and --data-dir.
    const setting = `--data-dir ${dataDir}`;
    const journal = onFile(setting, this.journalPath, 'open', () => readJournal(this.journalPath, 'r+'));
    this.file = onFile(setting, this.path, 'read', () => read(this.path));
    if (journal !== undefined) {
      // Text after the last newline was never fsynced as a whole line (a crash during an append):
      // cut off, so that the next line appended does not run into it.
      if (journal.whole < journal.size)
        onFile(setting, this.journalPath, 'write', () => cutSync(this.journalPath, journal.whole));
      journal.lines.forEach((line, i) => {
        const records = recover(line);
        if (records === undefined) {
          throw new FrondError(
            'INVALID_CONFIG',
            `${this.journalPath} line ${i + 1} is unreadable (${whyUnreadable(line)}); it holds the highest segment IDs this node was granted. Restore it, or delete it and ${HIGH_WATER_FILE} if the database was never failed over or restored since this node last ran`,
          );
        }
        for (const record of records) apply(this.file, record);
      });
    }
    this.journalLines = journal?.lines.length ?? 0;
    this.journalBytes = journal?.whole ?? 0;
    this.journalDurable = journal !== undefined;
    const stored: StoreShape = { epoch: 0, tags: {} };
    const also = options.alsoTagsOf;
    const fold = (file: FileShape) => {
      raise(stored, file.stores[scope]);
      if (also === undefined) return;
      for (const [other, store] of Object.entries(file.stores))
        if (other !== scope && also(other))
          raise(stored, { epoch: 0, tags: store.tags, kinds: store.kinds ?? {} });
    };
    fold(this.file);
    for (const dir of nodeDirs(options.nodeDir ?? nodeDirOf(dataDir), dataDir)) {
      fold(readSibling(dir, this.unreadable));
    }
    this.mine = {
      epoch: stored.epoch,
      identity: stored.identity,
      tags: new Map(Object.entries(stored.tags).map(([tag, max]) => [tag, BigInt(max)])),
      kinds: new Map(Object.entries(stored.kinds ?? {})),
      held: heldOf(this.file.stores[scope]),
    };
  }

  get state(): Readonly<HighWater> {
    return this.mine;
  }

  /** Raises what is remembered (never lowers it), with the grant's kind, and resolves once it is on disk. */
  record(
    tag: string,
    maxId: bigint,
    epoch: number,
    identity: string | undefined,
    kind?: string,
    /** The grant's first ID: the grant is held until it is released (`HighWater.held`). */
    start?: bigint,
  ): Promise<void> {
    const known = this.mine.tags.get(tag);
    if (known === undefined || maxId > known) this.mine.tags.set(tag, maxId);
    if (kind !== undefined) this.mine.kinds.set(tag, kind);
    this.seen(epoch, identity);
    if (start === undefined) return this.persist(tag);
    addHeldGrant(this.mine.held, tag, { start, end: maxId });
    return this.persist(tag, { start: start.toString() });
  }

  /**
   * A clean stop gives back `[to', was)` of `tag`: the record goes down to `to` if it is `was`
   * (this process's own last grant), and resolves once that is on disk. Safe before the database
   * took the range back, or if it never does: the process serves nothing of the tag any more, so
   * no ID at or above `to` was issued from this record's grants after it.
   */
  lower(tag: string, to: bigint, was: bigint): Promise<void> {
    if (this.mine.tags.get(tag) !== was || to >= was) return Promise.resolve();
    const bound = this.issuedBelow(tag, to);
    this.mine.tags.set(tag, bound);
    return this.append(tag, { set: bound.toString(), was: was.toString() });
  }

  /**
   * How high this process may have issued IDs of `tag` once everything from `from` up went back:
   * `from` itself where a grant runs across it, else the end of its last grant below it. A record
   * left at `from` when the whole of its last grants went back says more than it served: the
   * processes of a `--workers` node hand back one after another (one's tail ends where another's
   * starts, so the second goes back too), and the next start, folding every process's record,
   * found the first one's at the second one's `from` and fenced every tag for a database that
   * never went back. Grants this process did not keep (older than the held ones) are unknown:
   * `from` then, which is safe.
   */
  private issuedBelow(tag: string, from: bigint): bigint {
    const texts = this.file.stores[this.scope]?.held?.[tag] ?? [];
    const grants = texts.map(parseHeld).filter((grant) => grant !== undefined);
    for (let i = grants.length - 1; i >= 0; i--) {
      const grant = grants[i] as ParsedHeld;
      if (grant.start < from) return grant.end < from ? grant.end : from;
    }
    const prev = grants[0]?.prev;
    return prev !== undefined && prev < from ? prev : from;
  }

  /** The grants of `tag` held up to `upTo` are accounted for; resolves once that is on disk. */
  release(tag: string, upTo: bigint): Promise<void> {
    const held = this.mine.held.get(tag);
    if (held === undefined) return Promise.resolve();
    const kept = held.filter((grant) => grant.end > upTo);
    if (kept.length === 0) this.mine.held.delete(tag);
    else this.mine.held.set(tag, kept);
    return this.append(tag, { release: upTo.toString() });
  }

  /** One line about `tag` beside the epoch, without its max_id (see JournalLine). */
  private append(tag: string, fields: Pick<JournalLine, 'set' | 'was' | 'release'>): Promise<void> {
    const line: JournalLine = {
      store: this.scope,
      epoch: this.mine.epoch,
      ...(this.mine.identity === undefined ? {} : { identity: this.mine.identity }),
      tag,
      ...fields,
    };
    return this.enqueue(JSON.stringify(line));
  }

  /** Remembers a newer epoch (and the database it was on); an older one changes nothing. */
  seen(epoch: number, identity: string | undefined): void {
    if (epoch > this.mine.epoch || (epoch === this.mine.epoch && this.mine.identity === undefined)) {
      this.mine.epoch = epoch;
      this.mine.identity = identity;
    }
  }

  /** Puts what is remembered of this store (and of `tag`) on disk. */
  persist(tag?: string, fields?: Pick<JournalLine, 'start'>): Promise<void> {
    const line: JournalLine = {
      store: this.scope,
      epoch: this.mine.epoch,
      ...(this.mine.identity === undefined ? {} : { identity: this.mine.identity }),
    };
    const max = tag === undefined ? undefined : this.mine.tags.get(tag);
    if (tag !== undefined && max !== undefined) Object.assign(line, { tag, max: max.toString() });
    const kind = tag === undefined ? undefined : this.mine.kinds.get(tag);
    if (kind !== undefined) line.kind = kind;
    if (fields !== undefined) Object.assign(line, fields);
    return this.enqueue(JSON.stringify(line));
  }

  private enqueue(text: string): Promise<void> {
    this.pending.push(text);
    // A write that has not started yet will include this change.
    if (this.queued !== undefined) return this.queued;
    const run = this.chain.then(() => {
      this.queued = undefined;
      return this.write();
    });
    this.queued = run;
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async write(): Promise<void> {
    const lines = this.pending;
    this.pending = [];
    const text = `${lines.join('\n')}\n`;
    try {
      // A fragment left by an earlier failure is cut before anything is appended after it.
      if (this.torn) await this.cut();
      try {
        await this.io.append(this.journalPath, text);
      } catch (error) {
        // Part of `text` may be in the journal (ENOSPC after some bytes; or all of it, unsynced):
        // cut back at once, so the lines tried again start on a line of their own.
        this.torn = true;
        await this.cut().catch(() => undefined);
        throw error;
      }
      this.journalBytes += Buffer.byteLength(text);
      if (!this.journalDurable) {
        await syncDirectory(this.journalPath);
        this.journalDurable = true;
      }
    } catch (error) {
      // Not on disk (or its directory entry may not be): the next write carries these lines
      // again; a line written twice changes nothing.
      this.pending = [...lines, ...this.pending];
      throw error;
    }
    this.journalLines += lines.length;
    for (const text of lines) apply(this.file, JSON.parse(text) as JournalLine);
    if (this.journalLines > Math.max(COMPACT_AFTER_LINES, 4 * this.mine.tags.size)) await this.compact();
  }

  /** The journal back to its last length fsynced whole; throws (still torn) if that fails. */
  private async cut(): Promise<void> {
    try {
      await this.io.truncate(this.journalPath, this.journalBytes);
    } catch (error) {
      // No journal, no fragment: the failed append did not even create it.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      this.journalBytes = 0;
      this.journalDurable = false;
    }
    this.torn = false;
  }

  /** The whole file from what the journal says, then an empty journal. */
  private async compact(): Promise<void> {
    const text = `${JSON.stringify(this.file)}\n`;
    const temporary = `${this.path}.${process.pid}.tmp`;
    try {
      const handle = await open(temporary, 'w');
      try {
        await handle.writeFile(text);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temporary, this.path);
    } catch (error) {
      // A full disk: the journal still holds everything, and the next write tries again.
      await rm(temporary, { force: true }).catch(() => undefined);
      throw error;
    }
    await syncDirectory(this.path);
    // Every line is in the file now, so the journal may be emptied at any later time: if this cut
    // fails (it may have emptied the journal without an fsync), the next write cuts first.
    this.journalBytes = 0;
    this.journalLines = 0;
    try {
      await this.io.truncate(this.journalPath, 0);
    } catch (error) {
      this.torn = true;
      throw error;
    }
  }
}

async function syncDirectory(path: string): Promise<void> {
  const dir = await open(dirname(path), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}

function cutSync(path: string, length: number): void {
  const fd = openSync(path, 'r+');
  try {
    ftruncateSync(fd, length);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The node's data dir for a process keeping its files in `dataDir`. */
function nodeDirOf(dataDir: string): string {
  const own = resolve(dataDir);
  return WORKER_DIR.test(basename(own)) ? dirname(own) : own;
}

/** The node dir and every `worker-*` dir in it, but this process's own. */
function nodeDirs(nodeDir: string, dataDir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(nodeDir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && WORKER_DIR.test(entry.name))
      .map((entry) => entry.name)
      .sort();
  } catch {
    names = [];
  }
  const own = resolve(dataDir);
  return [nodeDir, ...names.map((name) => join(nodeDir, name))].filter((dir) => resolve(dir) !== own);
}

/**
 * What another process of the node recorded in `dir`, read only and while that process may be
 * writing. The journal is read before the file: that process's compaction writes the file (with
 * every journal line) before it empties the journal, so a journal read first either still holds
 * the lines or the file read after it has them. Its last line may be an append in progress (left
 * out, never cut: the file is not ours). A file or line that cannot be read is left out and noted
 * in `unreadable`, and the start goes on: those files are that process's to report, and it
 * refuses its own start on them (so a node with `--workers` does not start either); a leftover dir
 * of an earlier run with more workers must not stop a node from starting with fewer. What can be
 * read only raises the record, so leaving something out makes it no lower than this process's own.
 */
function readSibling(dir: string, unreadable: string[]): FileShape {
  const into: FileShape = { version: 1, stores: {} };
  let journal: Journal | undefined;
  try {
    journal = readJournal(join(dir, HIGH_WATER_JOURNAL));
  } catch (error) {
    unreadable.push(`${join(dir, HIGH_WATER_JOURNAL)}: ${(error as Error).message}`);
  }
  try {
    const file = readFileShape(join(dir, HIGH_WATER_FILE));
    if (file !== undefined)
      for (const [scope, store] of Object.entries(file.stores)) raiseIn(into, scope, store);
  } catch (error) {
    unreadable.push(`${join(dir, HIGH_WATER_FILE)}: ${(error as Error).message}`);
  }
  journal?.lines.forEach((line, i) => {
    const records = recover(line);
    if (records === undefined)
      unreadable.push(`${join(dir, HIGH_WATER_JOURNAL)} line ${i + 1}: ${whyUnreadable(line)}`);
    for (const record of records ?? []) apply(into, record);
  });
  return into;
}

function raiseIn(file: FileShape, scope: string, from: StoreShape): void {
  const store = file.stores[scope] ?? { epoch: 0, tags: {} };
  file.stores[scope] = store;
  raise(store, from);
}

/** Raises `store` to `from` by the rules of `apply`: the newer epoch, the higher max_id per tag. */
function raise(store: StoreShape, from: StoreShape | undefined): void {
  if (from === undefined) return;
  if (typeof from.epoch === 'number') raiseEpoch(store, from.epoch, from.identity);
  for (const [tag, max] of Object.entries(from.tags ?? {})) {
    if (typeof max === 'string' && INTEGER.test(max)) raiseTag(store, tag, max);
  }
  // A kind already known is kept: this process's own record comes first, the others' after it.
  for (const [tag, kind] of Object.entries(from.kinds ?? {})) {
    if (typeof kind !== 'string') continue;
    store.kinds ??= {};
    store.kinds[tag] ??= kind;
  }
}

/** A journal line into the file's shape, by the same rules as in memory: values only go up. */
function apply(file: FileShape, line: JournalLine): void {
  const store = file.stores[line.store] ?? { epoch: 0, tags: {} };
  file.stores[line.store] = store;
  apply1(store, line);
}

function apply1(store: StoreShape, line: JournalLine): void {
  raiseEpoch(store, line.epoch, line.identity);
  const before = line.tag === undefined ? undefined : store.tags[line.tag];
  if (line.tag !== undefined && line.max !== undefined) raiseTag(store, line.tag, line.max);
  if (line.tag !== undefined && line.max !== undefined && line.start !== undefined) {
    store.held ??= {};
    const start = BigInt(line.start);
    // A line replayed twice is the same grant: its `prev` stays the one written first.
    const kept = (store.held[line.tag] ?? []).filter((text) => parseHeld(text)?.start !== start);
    // No record before: this process had issued nothing of the tag, below this grant or anywhere.
    const prev = before ?? NOTHING_ISSUED;
    const entry = `${line.start}:${line.max}${BigInt(prev) > start ? '' : `:${prev}`}`;
    const grants = [...kept, entry]
      .map((text) => ({ text, grant: parseHeld(text) }))
      .filter((item) => item.grant !== undefined)
      .sort((a, b) => ((a.grant as ParsedHeld).start < (b.grant as ParsedHeld).start ? -1 : 1));
    store.held[line.tag] = grants.slice(-HELD_GRANTS).map((item) => item.text);
  }
  // In order: a lower applies to the record as the lines before it left it.
  if (
    line.tag !== undefined &&
    line.set !== undefined &&
    line.was !== undefined &&
    store.tags[line.tag] === line.was
  )
    store.tags[line.tag] = line.set;
  if (line.tag !== undefined && line.release !== undefined && store.held?.[line.tag] !== undefined) {
    const upTo = BigInt(line.release);
    const kept = store.held[line.tag]?.filter((text) => BigInt(text.split(':')[1] ?? '0') > upTo) ?? [];
    if (kept.length === 0) delete store.held[line.tag];
    else store.held[line.tag] = kept;
  }
  // The journal is in order: a later line's kind is the newer one.
  if (line.tag !== undefined && typeof line.kind === 'string') {
    store.kinds ??= {};
    store.kinds[line.tag] = line.kind;
  }
}

function raiseEpoch(store: StoreShape, epoch: number, identity: string | undefined): void {
  if (epoch > store.epoch || (epoch === store.epoch && store.identity === undefined)) {
    store.epoch = epoch;
    if (identity === undefined) delete store.identity;
    else store.identity = identity;
  }
}

function raiseTag(store: StoreShape, tag: string, max: string): void {
  const known = store.tags[tag];
  if (known === undefined || BigInt(max) > BigInt(known)) store.tags[tag] = max;
}

const INTEGER = /^-?[0-9]+$/;
/** A record below every ID (-2^63): the process issued none of the tag. */
const NOTHING_ISSUED = (-(2n ** 63n)).toString();
const HELD_TEXT = /^(-?[0-9]+):(-?[0-9]+)(?::(-?[0-9]+))?$/;

interface ParsedHeld extends HeldGrant {
  /** The process's own record before the grant, when known. */
  prev: bigint | undefined;
}

function parseHeld(text: unknown): ParsedHeld | undefined {
  const match = typeof text === 'string' ? HELD_TEXT.exec(text) : null;
  if (match === null) return undefined;
  return {
    start: BigInt(match[1] as string),
    end: BigInt(match[2] as string),
    prev: match[3] === undefined ? undefined : BigInt(match[3]),
  };
}

/** A store's held grants as `HighWater.held` (entries that do not parse are left out). */
function heldOf(store: StoreShape | undefined): Map<string, HeldGrant[]> {
  const held = new Map<string, HeldGrant[]>();
  for (const [tag, texts] of Object.entries(store?.held ?? {})) {
    if (!Array.isArray(texts)) continue;
    const grants: HeldGrant[] = [];
    for (const text of texts) {
      const grant = parseHeld(text);
      if (grant !== undefined) grants.push({ start: grant.start, end: grant.end });
    }
    if (grants.length > 0) held.set(tag, grants);
  }
  return held;
}

/** Adds a grant to a tag's held ones (a replayed line changes nothing), keeping the last HELD_GRANTS. */
function addHeldGrant(held: Map<string, HeldGrant[]>, tag: string, grant: HeldGrant): void {
  const grants = (held.get(tag) ?? []).filter((known) => known.start !== grant.start);
  grants.push(grant);
  grants.sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
  held.set(tag, grants.slice(-HELD_GRANTS));
}

/** A whole journal line, or undefined. */
function parseLine(text: string): JournalLine | undefined {
  try {
    const line = JSON.parse(text) as JournalLine;
    if (typeof line !== 'object' || line === null) return undefined;
    if (typeof line.store !== 'string' || typeof line.epoch !== 'number') return undefined;
    for (const field of ['max', 'start', 'set', 'was', 'release'] as const) {
      const value = line[field];
      if (value !== undefined && (typeof value !== 'string' || !INTEGER.test(value))) return undefined;
    }
    return line;
  } catch {
    return undefined;
  }
}

function whyUnreadable(text: string): string {
  try {
    JSON.parse(text);
    return 'not a change';
  } catch (error) {
    return (error as Error).message;
  }
}

/**
 * The records of one journal line (text between two newlines), or undefined when it holds none
 * that can be trusted. A whole valid line is one record. Otherwise the line may be an append that
 * ran on after a torn one: the torn append left a fragment with no newline (ENOSPC after part of
 * the text, and a crash before it was cut back), and the next append began on its line. Split at
 * each RECORD_START, such a line is fragments and whole records, and ends with a whole record
 * (the writer writes a newline only right after a whole record).
 *
 * - A fragment (a piece that starts a record but does not parse) was never acknowledged: its
 *   append failed, so no segment was served on it; the append tried again wrote it whole after it
 *   (that is the record that follows), or the process stopped before it served anything. Dropped.
 *   A proper prefix of a JSON object lacks its closing brace, so a cut line never parses as a
 *   record with a shorter (lower) max_id.
 * - A whole record before the last one (a torn append cut just before its newline) may not have
 *   been acknowledged either; it is kept, as every value only goes up and one too high costs at
 *   most a fence, never an ID twice.
 *
 * A line that does not end with a whole record is damage, not a torn append (say, an acknowledged
 * line cut short in the middle of the file): it is refused, as a guess could lower a max_id.
 */
function recover(text: string): JournalLine[] | undefined {
  const whole = parseLine(text);
  if (whole !== undefined) return [whole];
  const starts = [0];
  for (let at = text.indexOf(RECORD_START, 1); at !== -1; at = text.indexOf(RECORD_START, at + 1))
    starts.push(at);
  if (starts.length === 1) return undefined;
  const pieces = starts.map((start, i) => text.slice(start, starts[i + 1]));
  const last = parseLine(pieces.pop() as string);
  if (last === undefined) return undefined;
  const records: JournalLine[] = [];
  for (const piece of pieces) {
    const record = parseLine(piece);
    if (record !== undefined) records.push(record);
    // A fragment begins like every record: its first bytes are RECORD_START or a prefix of it.
    else if (!piece.startsWith(RECORD_START) && !RECORD_START.startsWith(piece)) return undefined;
  }
  records.push(last);
  return records;
}

interface Journal {
  /** The lines that end with a newline, decoded one by one. */
  lines: string[];
  /** Bytes up to and with the last newline. */
  whole: number;
  size: number;
}

/**
 * The journal's whole lines, or undefined if there is none. Bytes, not text: a fragment may end
 * inside a character. `r+` (this process's own journal) fails on one it could not append to.
 */
function readJournal(path: string, flag: 'r' | 'r+' = 'r'): Journal | undefined {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path, { flag });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const lines: string[] = [];
  let start = 0;
  for (let end = bytes.indexOf(0x0a); end !== -1; end = bytes.indexOf(0x0a, start)) {
    lines.push(bytes.toString('utf8', start, end));
    start = end + 1;
  }
  return { lines, whole: start, size: bytes.length };
}

/** The file, or undefined if there is none; throws a plain Error if it cannot be read. */
function readFileShape(path: string): FileShape | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const parsed = JSON.parse(text) as FileShape;
  if (parsed?.version !== 1 || typeof parsed.stores !== 'object' || parsed.stores === null)
    throw new Error('not version 1');
  return parsed;
}

function read(path: string): FileShape {
  let parsed: FileShape | undefined;
  try {
    parsed = readFileShape(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== undefined) throw error;
    // Never guessed at: a node that cannot read where it was could serve an ID again.
    throw new FrondError(
      'INVALID_CONFIG',
      `${path} is unreadable (${(error as Error).message}); it holds the highest segment IDs this node was granted. Restore it, or delete it if the database was never failed over or restored since this node last ran`,
    );
  }
  if (parsed !== undefined) return parsed;
  makeDirectory(dirname(path), '--data-dir');
  return { version: 1, stores: {} };
}
