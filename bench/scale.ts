import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SQLITE_DDL } from '../src/stores/sqlite/sqlite-database.js';
import { type ChildServer, startFrondServer } from './lib/child-server.js';
import { rssOf } from './lib/machine.js';
import { type Section, table } from './lib/markdown.js';
import { integer, ms, quantile, Samples } from './lib/stats.js';
import { tempDir } from './lib/temp-dir.js';

export interface ScaleOptions {
  tags: number;
  /** Requests in flight while the first IDs are fetched. */
  concurrency: number;
}

export interface ScaleSummary {
  tags: number;
  rssMiB: number;
  peakMiB: number;
  baselineRssMiB: number;
  seconds: number;
  errors: number;
  duplicates: number;
}

/** A data dir whose leaf_alloc has `count` tags (one transaction: 10,000 fsyncs would take a while). */
export function dataDirWithTags(count: number): { dir: string; tags: string[] } {
  const dir = tempDir();
  const db = new Database(join(dir, 'frond.db'));
  db.pragma('journal_mode = WAL');
  db.exec(SQLITE_DDL);
  const insert = db.prepare(
    'INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (?, 1, 1000, NULL)',
  );
  const tags = Array.from({ length: count }, (_, i) => `tag-${String(i).padStart(5, '0')}`);
  db.transaction(() => {
    for (const tag of tags) insert.run(tag);
  })();
  db.close();
  return { dir, tags };
}

/** Asks for the first ID of every tag, `concurrency` at a time; returns per-request latencies. */
async function firstIds(server: ChildServer, tags: string[], concurrency: number) {
  const latencies = new Samples();
  const ids = new Set<string>();
  let errors = 0;
  let next = 0;
  const worker = async () => {
    while (next < tags.length) {
      const tag = tags[next++] as string;
      const started = performance.now();
      const response = await fetch(`${server.url}/api/segment/get/${tag}`);
      const body = await response.text();
      latencies.push(performance.now() - started);
      if (response.status !== 200) errors++;
      else ids.add(`${tag}/${body}`);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  return {
    seconds: (performance.now() - started) / 1000,
    latencies: latencies.values().slice().sort(),
    errors,
    answered: ids.size,
  };
}

/**
 * The real `frond serve` with `tags` rows in leaf_alloc: the RSS once it has served the first ID of
 * every tag (each one a segment load: one SQLite transaction), against the same server with one tag.
 */
export async function runScale(options: ScaleOptions): Promise<{ section: Section; summary: ScaleSummary }> {
  const one = dataDirWithTags(1);
  const many = dataDirWithTags(options.tags);
  const baseline = await startFrondServer('frond, 1 tag', ['--port', '0', '--data-dir', one.dir]);
  const server = await startFrondServer(`frond, ${options.tags} tags`, [
    '--port',
    '0',
    '--data-dir',
    many.dir,
  ]);
  try {
    await firstIds(baseline, one.tags, 1);
    const idle = rssOf(server.pid);
    const run = await firstIds(server, many.tags, options.concurrency);
    const after = rssOf(server.pid);
    const base = rssOf(baseline.pid);
    const summary: ScaleSummary = {
      tags: options.tags,
      rssMiB: after?.rssMiB ?? Number.NaN,
      peakMiB: after?.peakMiB ?? Number.NaN,
      baselineRssMiB: base?.rssMiB ?? Number.NaN,
      seconds: run.seconds,
      errors: run.errors,
      // Every tag answered once; two tags answering the same ID is not a duplicate (separate sequences).
      duplicates: options.tags - run.answered - run.errors,
    };
    return {
      summary,
      section: {
        title: `Scale: ${integer(options.tags)} tags`,
        method: `The real \`frond serve\` (SQLite, step 1000 per tag) with ${integer(options.tags)} rows in leaf_alloc; the bench asks for the first ID of every tag over HTTP, ${options.concurrency} requests in flight. Each first ID is a segment load. The baseline is the same server with one tag, after its first ID. RSS from /proc.`,
        table: table(
          [
            'Server',
            ' RSS at start (MiB)',
            ' RSS after first IDs (MiB)',
            ' Peak RSS (MiB)',
            ' Time for all first IDs',
            ' First IDs/s',
            ' p50 (ms)',
            ' p99 (ms)',
            ' Errors',
          ],
          [
            [
              `frond, ${integer(options.tags)} tags`,
              idle?.rssMiB.toFixed(1) ?? '–',
              summary.rssMiB.toFixed(1),
              summary.peakMiB.toFixed(1),
              `${run.seconds.toFixed(2)} s`,
              integer(options.tags / run.seconds),
              ms(quantile(run.latencies, 0.5)),
              ms(quantile(run.latencies, 0.99)),
              integer(run.errors),
            ],
            [
              'frond, 1 tag (baseline)',
              '–',
              summary.baselineRssMiB.toFixed(1),
              base?.peakMiB.toFixed(1) ?? '–',
              '–',
              '–',
              '–',
              '–',
              '0',
            ],
          ],
        ),
        notes: [
          `${integer(options.tags)} tags cost ${(summary.rssMiB - summary.baselineRssMiB).toFixed(1)} MiB over the one-tag baseline.`,
        ],
      },
    };
  } finally {
    await Promise.all([baseline.stop(), server.stop()]);
  }
}
