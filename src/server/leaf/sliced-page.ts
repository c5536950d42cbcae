/**
 * Pages that list every tag (`/cache`, `/db`): at 50,000 tags one page is megabytes of HTML, and
 * building it in one go held the event loop for seconds (issue 16: an ID request waited 7.1 s).
 * So a page is built `SLICE_ROWS` rows at a time with a turn of the event loop between slices, and
 * the built page is kept `PAGE_TTL_MS`, or ten times its build time when longer, so that a poller
 * makes the node build it at most once a second (and spend at most a tenth of its time on it), and
 * concurrent requests share one build.
 */

/** Rows per slice: 250 rows of `/cache` are ~0.3 ms of string building, well under a few ms. */
export const SLICE_ROWS = 250;
/** How long a built page is answered again as it is, at the least. */
export const PAGE_TTL_MS = 1_000;
/**
 * And at least this many times as long as its build took: a poller can make a node spend at most a
 * tenth of its time building a page. `/db` at 50,000 tags (4 MB) took 0.6 s to build on a loaded
 * 2-core machine, and rebuilt every second it cost a core's worth of the time ID requests need.
 */
export const PAGE_TTL_PER_BUILD = 10;

/** Runs a generator that yields after each slice, one slice per turn of the event loop. */
export function runInSlices<T>(
  steps: Generator<void, T, void>,
  turn: (next: () => void) => void = setImmediate,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const step = () => {
      try {
        const result = steps.next();
        if (result.done) resolve(result.value);
        else turn(step);
      } catch (error) {
        reject(error);
      }
    };
    step();
  });
}

/**
 * A page's bytes, encoded a slice at a time: one 4 MB string joined and encoded at the end took
 * tens of ms in one go; the cached Buffer is then written as it is.
 */
export class PageChunks {
  private readonly chunks: Buffer[] = [];
  private pending: string[] = [];
  private rows = 0;

  text(text: string): void {
    this.pending.push(text);
  }

  /** A table row; rows are separated by a newline, as the pages always were. */
  row(html: string): void {
    this.pending.push(this.rows++ === 0 ? html : `\n${html}`);
  }

  /** Encodes what came since the last flush: call it at the end of each slice. */
  flush(): void {
    if (this.pending.length === 0) return;
    this.chunks.push(Buffer.from(this.pending.join('')));
    this.pending = [];
  }

  done(): Buffer {
    this.flush();
    return Buffer.concat(this.chunks);
  }
}

/** A page built at most once per `ttlMs`: the build in flight, or the last one while fresh. */
export class CachedPage {
  private built: { at: number; ttlMs: number; text: Buffer } | undefined;
  private building: Promise<Buffer> | undefined;

  constructor(
    private readonly build: () => Promise<Buffer>,
    private readonly now: () => number,
    private readonly ttlMs = PAGE_TTL_MS,
  ) {}

  get(): Promise<Buffer> {
    const built = this.built;
    if (built !== undefined && this.now() - built.at < built.ttlMs) return Promise.resolve(built.text);
    if (this.building !== undefined) return this.building;
    const started = this.now();
    const building = this.build().then(
      (text) => {
        const at = this.now();
        this.built = { at, ttlMs: Math.max(this.ttlMs, PAGE_TTL_PER_BUILD * (at - started)), text };
        this.building = undefined;
        return text;
      },
      (error: unknown) => {
        this.building = undefined;
        throw error;
      },
    );
    this.building = building;
    return building;
  }
}
