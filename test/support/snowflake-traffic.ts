import { decomposeSnowflake } from '../../src/core/snowflake-layout.js';
import type { FrondProcess } from './frond-process.js';
import { httpGet } from './http-get.js';

/** IDs of one `/v1/snowflake?count=N` answer, as exact BigInts (snowflakes exceed 2^53). */
export async function takeIds(node: { url: string }, count = 50): Promise<bigint[]> {
  const answer = await httpGet(`${node.url}/v1/snowflake?count=${count}`, { timeoutMs: 5000 });
  if (answer.status !== 200) throw new Error(`${node.url}: ${answer.status} ${answer.body}`);
  return (JSON.parse(answer.body) as { ids: string[] }).ids.map(BigInt);
}

/** The answer's status and error code, for a request expected to fail. */
export async function snowflakeStatus(node: {
  url: string;
}): Promise<{ status: number; code: string | undefined }> {
  const answer = await httpGet(`${node.url}/v1/snowflake?count=1`, { timeoutMs: 5000 });
  const code =
    answer.status === 200
      ? undefined
      : (JSON.parse(answer.body) as { error?: { code?: string } }).error?.code;
  return { status: answer.status, code };
}

/** The worker ID a node logged when it started listening. */
export function workerIdOf(node: FrondProcess): number {
  for (const line of node.logs) {
    if (!line.includes('"listening"')) continue;
    const event = JSON.parse(line) as { snowflakeWorkerId?: number };
    if (typeof event.snowflakeWorkerId === 'number') return event.snowflakeWorkerId;
  }
  throw new Error(`no worker ID in the logs:\n${node.logs.join('\n')}`);
}

export interface Traffic {
  ids: bigint[];
  /** Answers by HTTP status (0: no answer). */
  statuses: Map<number, number>;
  stop(): Promise<void>;
}

/**
 * Asks `node` for batches of IDs, one request at a time, until stopped (at most 20,000 requests);
 * `pauseMs` between requests leaves the machine's cores to the nodes when many run.
 */
export function traffic(node: { url: string }, count = 20, pauseMs = 0): Traffic {
  const ids: bigint[] = [];
  const statuses = new Map<number, number>();
  let running = true;
  const count1 = (status: number) => statuses.set(status, (statuses.get(status) ?? 0) + 1);
  const loop = (async () => {
    for (let i = 0; running && i < 20_000; i++) {
      try {
        const answer = await httpGet(`${node.url}/v1/snowflake?count=${count}`, { timeoutMs: 5000 });
        count1(answer.status);
        if (answer.status === 200)
          ids.push(...(JSON.parse(answer.body) as { ids: string[] }).ids.map(BigInt));
        if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
      } catch {
        if (!running) break;
        count1(0);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  })();
  return {
    ids,
    statuses,
    async stop() {
      running = false;
      await loop;
    },
  };
}

/** Throws unless every ID is unique; returns how many there were. */
export function assertUnique(ids: readonly bigint[]): number {
  const seen = new Set<bigint>();
  for (const id of ids) {
    if (seen.has(id)) {
      const parts = decomposeSnowflake(id);
      throw new Error(
        `ID ${id} issued twice (worker ${parts.workerId}, ${parts.timestamp}, seq ${parts.sequence})`,
      );
    }
    seen.add(id);
  }
  return seen.size;
}

/** The largest ID, or -1 for none (BigInts: Math.max does not take them). */
export function maxOf(ids: readonly bigint[]): bigint {
  let max = -1n;
  for (const id of ids) if (id > max) max = id;
  return max;
}

/** The smallest ID, or -1 for none. */
export function minOf(ids: readonly bigint[]): bigint {
  let min = ids[0] ?? -1n;
  for (const id of ids) if (id < min) min = id;
  return min;
}
