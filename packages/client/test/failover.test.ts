import assert from 'node:assert/strict';
import { it } from 'node:test';
import { setTimeout as sleep, setImmediate as yieldToLoop } from 'node:timers/promises';
import { createClient } from '../src/index.js';
import { addTag, serve, sharedStore } from './support/servers.js';

const TAG = 'failover';
/** How long the clients run before the kill, and after it. */
const BEFORE_KILL_MS = 700;
const AFTER_KILL_MS = 1_300;

interface CallerReport {
  ids: number[];
  afterKill: number;
  errors: string[];
  /** The longest time one `nextId` took, in ms. */
  longestWaitMs: number;
  longestWaitAt: number;
  /** The longest `nextId` among those asked after the kill, in ms. */
  longestAfterKillMs: number;
}

/** The IDs that occur more than once, by sorting a copy as doubles (millions of IDs, no Set). */
function repeated(ids: readonly number[]): number[] {
  const sorted = Float64Array.from(ids).sort();
  const out: number[] = [];
  for (let i = 1; i < sorted.length; i++) if (sorted[i] === sorted[i - 1]) out.push(sorted[i] as number);
  return out;
}

const VARIANTS = [
  // Small grants keep every client fetching, so the kill lands while requests are in flight; above
  // the table's step of 100 they come straight from the store.
  { name: 'grants of at most 200', batching: { minBatchSize: 10, maxBatchSize: 200 } },
  // Grants sized to 100 ms of each caller's rate: hundreds of thousands of IDs, one advance each.
  { name: 'grants sized to the rate', batching: { batchTargetMs: 100 } },
] as const;

for (const variant of VARIANTS) {
  it(`fails over when a server is SIGKILLed while clients run, and never repeats an ID (${variant.name})`, async (t) => {
    await runFailover(t, variant.batching);
  });
}

async function runFailover(
  t: { diagnostic: (message: string) => void },
  batching: (typeof VARIANTS)[number]['batching'],
): Promise<void> {
  // Two servers on one SQLite file: their segment ranges come from one table, so they never overlap.
  const store = sharedStore();
  await addTag(store, TAG, 100);
  const a = await serve(store, 1);
  const b = await serve(store, 2);
  const options = {
    idType: 'number',
    ...batching,
    timeoutMs: 1_000,
    backoffInitialMs: 20,
    backoffMaxMs: 200,
    // 0: each client starts with its first URL, so half of them are on the server that dies.
    random: () => 0,
  } as const;
  const clients = [0, 1, 2, 3].map((i) =>
    createClient({ ...options, urls: i % 2 === 0 ? [a.url, b.url] : [b.url, a.url] }),
  );
  const started = Date.now();
  let killedAt = Number.POSITIVE_INFINITY;
  const stopAt = started + BEFORE_KILL_MS + AFTER_KILL_MS;
  try {
    const callers = clients.flatMap((client) =>
      [0, 1].map(async (): Promise<CallerReport> => {
        const report: CallerReport = {
          ids: [],
          afterKill: 0,
          errors: [],
          longestWaitMs: 0,
          longestWaitAt: 0,
          longestAfterKillMs: 0,
        };
        for (let i = 0; i < 2_000_000 && Date.now() < stopAt; i++) {
          const askedAt = Date.now();
          try {
            report.ids.push(await client.nextId(TAG));
          } catch (error) {
            report.errors.push(String(error));
          }
          const waited = Date.now() - askedAt;
          if (waited > report.longestWaitMs) {
            report.longestWaitMs = waited;
            report.longestWaitAt = askedAt - started;
          }
          if (askedAt >= killedAt) {
            report.afterKill++;
            report.longestAfterKillMs = Math.max(report.longestAfterKillMs, waited);
          }
          // Let timers and sockets run now and then: buffered IDs resolve without leaving the process.
          if (i % 50 === 0) await yieldToLoop();
        }
        return report;
      }),
    );
    await sleep(BEFORE_KILL_MS);
    killedAt = Date.now();
    a.child.kill('SIGKILL');
    const reports = await Promise.all(callers);
    const ids = reports.flatMap((report) => report.ids);
    const slowest = reports.reduce((max, report) =>
      report.longestWaitMs > max.longestWaitMs ? report : max,
    );
    t.diagnostic(
      `${ids.length} IDs from 8 callers on 4 clients; server A SIGKILLed at ${killedAt - started} ms; ` +
        `${reports.reduce((sum, report) => sum + report.afterKill, 0)} IDs after the kill; longest nextId ` +
        `${slowest.longestWaitMs} ms (asked at ${slowest.longestWaitAt} ms), longest after the kill ` +
        `${Math.max(...reports.map((r) => r.longestAfterKillMs))} ms; errors: ${reports.flatMap((r) => r.errors).length}`,
    );
    assert.equal(await a.exited, 'SIGKILL');
    assert.deepEqual(repeated(ids), []);
    assert.deepEqual(
      reports.flatMap((report) => report.errors),
      [],
      'a dead server is failed over, not reported',
    );
    for (const report of reports)
      assert.ok(report.afterKill > 100, `a caller stalled: ${report.afterKill} IDs after the kill`);
    // A refused connection fails over at once; a request cut mid-flight too. Well under the 1 s timeout.
    assert.ok(slowest.longestWaitMs < 1_000, `longest wait ${slowest.longestWaitMs} ms`);
  } finally {
    for (const client of clients) client.close();
    a.child.kill('SIGKILL');
    await b.stop();
  }
}
