import { Agent } from 'node:http';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { type FrondProcess, startFrond, tempDir } from './frond-process.js';
import { httpGet, idsOf } from './http-get.js';

/** A free port on 127.0.0.1 now: a node keeps it across its restarts, so its gaps name one node. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** One node: a data dir and a port of its own, restarted on both; every process it ran, kept. */
export class Node {
  process: FrondProcess | undefined;
  readonly retired: FrondProcess[] = [];
  agent = new Agent({ keepAlive: true, maxSockets: 4 });
  /** Set while the node is stopped or starting: its clients wait. */
  down = true;
  /** Set from the signal to the exit: a failed request is the stop, not a fault. */
  stopping = false;
  stops = 0;
  /** How long each start (to the `listening` line) and each stop (to the exit) took, in ms. */
  readonly startMs: number[] = [];
  readonly stopMs: number[] = [];

  private constructor(
    readonly label: string,
    readonly dir: string,
    readonly port: number,
    private readonly args: string[],
  ) {}

  static async create(label: string, store: string, extra: string[] = []): Promise<Node> {
    const port = await freePort();
    const dir = tempDir('frond-hb-node-');
    return new Node(label, dir, port, [
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--data-dir',
      dir,
      '--no-snowflake',
      '--store',
      store,
      ...extra,
    ]);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The node's name in frond_gaps. */
  get name(): string {
    return `127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    // The port was just freed by the previous process; a start that lost it to TIME_WAIT or to
    // another process is tried again, three times at most.
    const began = performance.now();
    for (let attempt = 1; ; attempt++) {
      try {
        this.process = await startFrond(this.args);
        this.startMs.push(performance.now() - began);
        break;
      } catch (error) {
        if (attempt >= 3 || !/EADDRINUSE/.test((error as Error).message)) throw error;
        await sleep(300);
      }
    }
    this.agent = new Agent({ keepAlive: true, maxSockets: 4 });
    this.down = false;
  }

  /** Stops the running process with `signal`; resolves with its exit (0 for a clean stop). */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | string | undefined> {
    const running = this.process;
    if (running === undefined) return undefined;
    this.stopping = true;
    const began = performance.now();
    try {
      const exit = await running.stop(signal);
      this.stopMs.push(performance.now() - began);
      this.retired.push(running);
      this.process = undefined;
      this.down = true;
      this.stops++;
      this.agent.destroy();
      return exit;
    } finally {
      this.stopping = false;
    }
  }

  async restart(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | string | undefined> {
    const exit = await this.stop(signal);
    await this.start();
    return exit;
  }

  /** Every log line of every process of this node, the oldest first. */
  logs(): string[] {
    return [...this.retired, ...(this.process === undefined ? [] : [this.process])].flatMap((p) => p.logs);
  }

  /** Log events named `event` (the JSON lines), over every process. */
  events(event: string): Record<string, unknown>[] {
    return this.logs()
      .filter((line) => line.includes(`"event":"${event}"`))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }

  /**
   * Where `id` went on this node, for a failure's message: the grants holding it (by process, in
   * order: `#2` is the node's second process) and what that process did at its end.
   */
  trace(id: number): string[] {
    const processes = [...this.retired, ...(this.process === undefined ? [] : [this.process])];
    return processes.flatMap((p, i) => {
      const events = p.logs
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      const held = events.filter(
        (e) => e.event === 'segment.loaded' && Number(e.start) <= id && id < Number(e.max),
      );
      if (held.length === 0) return [];
      const ending = events
        .filter((e) => /^segment\.(handed_back|hand_back_failed|crash_gaps)/.test(String(e.event)))
        .map((e) => JSON.stringify(e));
      const ended = p.child.signalCode ?? p.child.exitCode;
      return [
        `${this.label} #${i + 1} (ended ${ended}): granted ${held.map((e) => `[${e.start}, ${e.max}) at ${e.time}`).join(', ')}; ${ending.join(' ') || 'no hand-back line'}`,
      ];
    });
  }

  /** Error lines and stderr over every process. */
  errors(): string[] {
    return [...this.retired, ...(this.process === undefined ? [] : [this.process])].flatMap((p) => [
      ...p.logs.filter((line) => line.includes('"level":"error"')),
      ...p.stderr,
    ]);
  }
}

/** IDs of one tag taken from `node` in `count` sequential requests (Leaf's route and batches of 5, by turns). */
export async function takeIds(node: Node, tag: string, count: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < count; i++) {
    const path = i % 2 === 0 ? `/api/segment/get/${tag}` : `/v1/segment/${tag}?count=5`;
    const answer = await httpGet(`${node.url}${path}`, { agent: node.agent, timeoutMs: 10_000 });
    if (answer.status !== 200) throw new Error(`${node.label} ${path}: ${answer.status} ${answer.body}`);
    ids.push(...idsOf(answer));
  }
  return ids;
}

/**
 * Clients taking IDs of one tag from nodes, every answer kept: Leaf's route and batches of 20 by
 * turns. Allowed: 200, 503 with Retry-After (a node that is stopping refuses new work), and a
 * refused or cut connection while its node is stopping or down.
 */
export class Load {
  readonly ids: number[] = [];
  readonly failures: string[] = [];
  requests = 0;
  refused = 0;
  cut = 0;
  private stopped = false;
  private readonly running: Promise<void>[] = [];

  constructor(private readonly tag: string) {}

  /** `clients` clients on `node`, each waiting `paceMs` after every answer (0: none). */
  add(node: Node, clients: number, paceMs = 0): void {
    for (let c = 0; c < clients; c++) this.running.push(this.client(node, c, paceMs));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.running);
  }

  private async client(node: Node, index: number, paceMs: number): Promise<void> {
    // Bounded: at most 100,000 requests per client, and the test stops the load.
    for (let k = index; !this.stopped && k < 100_000; k++) {
      if (node.down) {
        await sleep(5);
        continue;
      }
      const path = k % 2 === 0 ? `/api/segment/get/${this.tag}` : `/v1/segment/${this.tag}?count=20`;
      const wasStopping = node.stopping;
      try {
        const answer = await httpGet(`${node.url}${path}`, { agent: node.agent, timeoutMs: 10_000 });
        this.requests++;
        if (answer.status === 200) {
          for (const id of idsOf(answer)) this.ids.push(id);
          if (paceMs > 0) await sleep(paceMs);
          continue;
        }
        if (answer.status === 503 && answer.retryAfter !== undefined) {
          this.refused++;
          await sleep(10);
          continue;
        }
        this.failures.push(`${node.label} ${path}: ${answer.status} ${answer.body}`);
        await sleep(10);
      } catch (error) {
        if (wasStopping || node.stopping || node.down) {
          this.cut++;
          await sleep(5);
        } else {
          this.failures.push(`${node.label} ${path}: ${(error as Error).message}`);
          await sleep(10);
        }
      }
    }
  }
}

/** One gap as `GET /v1/tags/{tag}/gaps` answers it. */
export interface WireGap {
  start: number;
  end: number;
  reason: string;
  node: string;
  at: number;
}

/**
 * Every gap of `tag`, through the admin route, page by page: `next` is the `after` of the page
 * after it (a start ID; the page holds gaps starting above it), null on the last. Bounded: 1,000
 * pages of 100.
 */
export async function listGaps(url: string, tag: string): Promise<WireGap[]> {
  const gaps: WireGap[] = [];
  const seen = new Set<string>();
  let after: string | undefined;
  for (let page = 0; page < 1_000; page++) {
    const query = `limit=100${after === undefined ? '' : `&after=${after}`}`;
    const answer = await httpGet(`${url}/v1/tags/${tag}/gaps?${query}`, { timeoutMs: 10_000 });
    if (answer.status !== 200) throw new Error(`GET /v1/tags/${tag}/gaps: ${answer.status} ${answer.body}`);
    const body = JSON.parse(answer.body) as {
      gaps: { start: string; end: string; reason: string; node: string; at: string | null }[];
      next?: string | null;
    };
    for (const gap of body.gaps) {
      const key = `${gap.start} ${gap.end}`;
      if (seen.has(key)) throw new Error(`GET /v1/tags/${tag}/gaps: [${key}) on two pages`);
      seen.add(key);
      gaps.push({
        start: Number(gap.start),
        end: Number(gap.end),
        reason: gap.reason,
        node: gap.node,
        at: gap.at === null ? 0 : Date.parse(gap.at),
      });
    }
    const next = body.next !== undefined ? body.next : (body.gaps[body.gaps.length - 1]?.start ?? null);
    if (next === null || body.gaps.length === 0) return gaps;
    after = next;
  }
  throw new Error(`GET /v1/tags/${tag}/gaps: more than 1,000 pages`);
}

/** Ranges and IDs of `gaps` by reason, as a figure: `crash 2/400, unsafe_hand_back 5/1200`. */
export function byReason(gaps: readonly WireGap[]): Map<string, { ranges: number; ids: number }> {
  const totals = new Map<string, { ranges: number; ids: number }>();
  for (const gap of gaps) {
    const total = totals.get(gap.reason) ?? { ranges: 0, ids: 0 };
    total.ranges++;
    total.ids += gap.end - gap.start;
    totals.set(gap.reason, total);
  }
  return totals;
}

export function reasonFigure(gaps: readonly WireGap[]): string {
  const totals = [...byReason(gaps)];
  if (totals.length === 0) return 'no gaps';
  return totals.map(([reason, { ranges, ids }]) => `${reason} ${ranges} ranges/${ids} IDs`).join(', ');
}

/** What became of every ID of a tag from its first to its max_id. */
export interface Accounting {
  /** IDs in [first, maxId). */
  span: number;
  answered: number;
  /** IDs answered more than once (each extra answer counted). */
  duplicates: number;
  /** Answered IDs at or above max_id (the table must be above every ID issued). */
  aboveMaxId: number;
  /** IDs in a gap other than `crash` that were also answered (a gap is IDs never issued). */
  answeredInGap: number;
  /** IDs in a `crash` gap that were answered before the crash (allowed: a crash gap is an upper bound). */
  answeredInCrashGap: number;
  /** IDs in two gaps at once. */
  inTwoGaps: number;
  /** IDs in a gap at or above max_id. */
  gapAboveMaxId: number;
  /** IDs neither answered nor in a gap. */
  unaccounted: number;
  /** The first few unaccounted IDs as runs, to say where they went. */
  unaccountedRuns: string[];
}

/**
 * Every ID in [first, maxId) must be answered once or lie in a gap of the report; the extra
 * counts say which of the rules broke. `maxId` is leaf_alloc's after every node stopped.
 */
export function account(
  ids: readonly number[],
  gaps: readonly WireGap[],
  first: number,
  maxId: number,
): Accounting {
  const span = Math.max(0, maxId - first);
  if (span > 50_000_000) throw new Error(`a span of ${span} IDs is too wide to account for`);
  const answered = new Uint8Array(span);
  const gapped = new Uint8Array(span);
  const crashed = new Uint8Array(span);
  let duplicates = 0;
  let aboveMaxId = 0;
  let gapAboveMaxId = 0;
  for (const id of ids) {
    if (id >= maxId || id < first) {
      aboveMaxId++;
      continue;
    }
    const i = id - first;
    if ((answered[i] as number) > 0) duplicates++;
    else answered[i] = 1;
  }
  let inTwoGaps = 0;
  for (const gap of gaps) {
    for (let id = gap.start; id < gap.end; id++) {
      if (id >= maxId || id < first) {
        gapAboveMaxId++;
        continue;
      }
      const i = id - first;
      if ((gapped[i] as number) > 0) inTwoGaps++;
      gapped[i] = 1;
      if (gap.reason === 'crash') crashed[i] = 1;
    }
  }
  let answeredInGap = 0;
  let answeredInCrashGap = 0;
  let unaccounted = 0;
  const unaccountedRuns: string[] = [];
  let runStart = -1;
  for (let i = 0; i <= span; i++) {
    const lost = i < span && answered[i] === 0 && gapped[i] === 0;
    if (lost) {
      unaccounted++;
      if (runStart < 0) runStart = i;
    } else if (runStart >= 0) {
      if (unaccountedRuns.length < 5) unaccountedRuns.push(`[${first + runStart}, ${first + i})`);
      runStart = -1;
    }
    if (i < span && answered[i] === 1 && gapped[i] === 1) {
      if (crashed[i] === 1) answeredInCrashGap++;
      else answeredInGap++;
    }
  }
  return {
    span,
    answered: ids.length,
    duplicates,
    aboveMaxId,
    answeredInGap,
    answeredInCrashGap,
    inTwoGaps,
    gapAboveMaxId,
    unaccounted,
    unaccountedRuns,
  };
}

/** IDs handed back to the table by `nodes`' clean stops, from their `segment.handed_back` lines. */
export function handedBack(nodes: readonly Node[]): { ids: number; tags: number } {
  let ids = 0;
  let tags = 0;
  for (const node of nodes)
    for (const line of node.events('segment.handed_back'))
      if (line.from !== undefined && line.to !== undefined) {
        ids += Number(line.to) - Number(line.from);
        tags++;
      }
  return { ids, tags };
}

/** The `frond_ids_*` counters of a node's /metrics, as they are, for the figures. */
export async function gapMetrics(node: Node): Promise<string[]> {
  const answer = await httpGet(`${node.url}/metrics`, { timeoutMs: 10_000 });
  return answer.body.split('\n').filter((line) => /^frond_(ids_handed_back|ids_given_up|gap_ids)/.test(line));
}

/** The median of `values` in ms, as a figure (`-` for none). */
export function medianMs(values: readonly number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted[Math.floor(sorted.length / 2)];
  return middle === undefined ? '-' : `${Math.round(middle)} ms`;
}
