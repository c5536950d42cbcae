import { mkdirSync, readFileSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { FrondError } from '../../core/errors.js';

/** What a node remembers of one database, across restarts. */
export interface HighWater {
  /** The newest fence epoch seen, and the database identity it was seen on. */
  epoch: number;
  identity: string | undefined;
  /** Per tag, the highest max_id this node was ever granted. */
  tags: Map<string, bigint>;
}

interface FileShape {
  version: 1;
  stores: Record<string, { epoch: number; identity?: string; tags: Record<string, string> }>;
}

export const HIGH_WATER_FILE = 'segment-high-water.json';

/**
 * `<data-dir>/segment-high-water.json`: per store, the highest max_id this node was granted per
 * tag and the newest fence epoch it saw. Written durably (a temporary file, fsync, rename, fsync of
 * the directory) after every segment load and before the segment is served, so a node restarted
 * after its database went back still knows where it was. Writes are serialized; one write covers
 * every change made before it started.
 */
export class HighWaterFile {
  readonly path: string;
  private readonly file: FileShape;
  private readonly mine: HighWater;
  private chain: Promise<void> = Promise.resolve();
  private queued: Promise<void> | undefined;

  constructor(
    dataDir: string,
    /** The store this node uses, without host and password (a failover changes the host). */
    private readonly scope: string,
  ) {
    this.path = join(dataDir, HIGH_WATER_FILE);
    this.file = read(this.path);
    const stored = this.file.stores[scope];
    this.mine = {
      epoch: stored?.epoch ?? 0,
      identity: stored?.identity,
      tags: new Map(Object.entries(stored?.tags ?? {}).map(([tag, max]) => [tag, BigInt(max)])),
    };
  }

  get state(): Readonly<HighWater> {
    return this.mine;
  }

  /** Raises what is remembered (never lowers it) and resolves once it is on disk. */
  record(tag: string, maxId: bigint, epoch: number, identity: string | undefined): Promise<void> {
    const known = this.mine.tags.get(tag);
    if (known === undefined || maxId > known) this.mine.tags.set(tag, maxId);
    this.seen(epoch, identity);
    return this.persist();
  }

  /** Remembers a newer epoch (and the database it was on); an older one changes nothing. */
  seen(epoch: number, identity: string | undefined): void {
    if (epoch > this.mine.epoch || (epoch === this.mine.epoch && this.mine.identity === undefined)) {
      this.mine.epoch = epoch;
      this.mine.identity = identity;
    }
  }

  persist(): Promise<void> {
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
    this.file.stores[this.scope] = {
      epoch: this.mine.epoch,
      ...(this.mine.identity === undefined ? {} : { identity: this.mine.identity }),
      tags: Object.fromEntries([...this.mine.tags].map(([tag, max]) => [tag, max.toString()])),
    };
    const text = `${JSON.stringify(this.file)}\n`;
    const temporary = `${this.path}.${process.pid}.tmp`;
    const handle = await open(temporary, 'w');
    try {
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, this.path);
    const dir = await open(dirname(this.path), 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  }
}

function read(path: string): FileShape {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      mkdirSync(dirname(path), { recursive: true });
      return { version: 1, stores: {} };
    }
    throw error;
  }
  try {
    const parsed = JSON.parse(text) as FileShape;
    if (parsed.version !== 1 || typeof parsed.stores !== 'object' || parsed.stores === null)
      throw new Error('not version 1');
    return parsed;
  } catch (error) {
    // Never guessed at: a node that cannot read where it was could serve an ID again.
    throw new FrondError(
      'INVALID_CONFIG',
      `${path} is unreadable (${(error as Error).message}); it holds the highest segment IDs this node was granted. Restore it, or delete it if the database was never failed over or restored since this node last ran`,
    );
  }
}
