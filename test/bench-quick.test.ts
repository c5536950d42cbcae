import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { type CommandResult, runNode, tempDir } from './support/frond-process.js';

const RUN = new URL('../bench/run.ts', import.meta.url).pathname;

interface Figures {
  inProcess: { name: string; duplicates: number; sampled: number }[];
  http: { fixedRateDuplicates: number };
  boundary: { duplicates: number };
  scale: { duplicates: number; tags: number };
  workers: { leafSegment: [number, number] };
  client: { name: string; idsPerSecond: number; outOfOrder: number }[];
  opaque: { rows: { name: string; idsPerSecond: number; duplicates: number }[] };
  grpc: { duplicates: number; errors: number; grpcNextCallsPerSecond: number };
}

/** Runs `bench/run.ts ARGS` to its end (the suite starts real frond processes from dist/). */
function runBench(args: string[]): Promise<CommandResult> {
  // A ceiling for a hang: about 20 s alone, over 100 s with both cores busy.
  return runNode(['--import', 'tsx', RUN, ...args], { timeoutMs: 240_000 });
}

// Speed is never asserted here: CI machines differ and share their cores. What must hold anywhere is
// that every benchmark runs to its end and that frond never hands out an ID twice while it does.
describe('npm run bench -- --quick', () => {
  it('runs every benchmark and frond shows 0 duplicates', async () => {
    const json = join(tempDir('frond-bench-test-'), 'figures.json');
    const result = await runBench(['--quick', '--json', json]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^## Targets$/m);
    for (const title of [
      'In-process generation',
      'HTTP, one ID per request',
      'Segment boundaries',
      'Scale',
      'Workers',
      'Client SDK, sustained',
      'Operator pages under ID load',
      'Opaque batches',
      'gRPC against HTTP',
      'RESP port',
    ])
      assert.match(result.stdout, new RegExp(`^## ${title}`, 'm'));

    const figures = JSON.parse(readFileSync(json, 'utf8')) as Figures;
    const frond = figures.inProcess.filter((row) => row.name.startsWith('frond'));
    // Segment below 2^53, segment above 2^62, snowflake with randomStart off and on.
    assert.equal(frond.length, 4);
    for (const row of frond) {
      assert.ok(row.sampled > 0);
      assert.equal(row.duplicates, 0, `${row.name}: ${row.duplicates} duplicates`);
    }
    assert.equal(figures.http.fixedRateDuplicates, 0);
    assert.equal(figures.boundary.duplicates, 0);
    assert.equal(figures.scale.duplicates, 0);
    assert.equal(figures.workers.leafSegment.length, 2);
    // tryNextId and await nextId in both types, and snowflake(): IDs came, and in order.
    assert.equal(figures.client.length, 5);
    for (const row of figures.client) {
      assert.ok(row.idsPerSecond > 0, row.name);
      assert.equal(row.outOfOrder, 0, row.name);
    }
    // Plain and four opaque domains, batches of 1000 through TagIssuer.many: IDs came, none twice.
    assert.equal(figures.opaque.rows.length, 5);
    for (const row of figures.opaque.rows) {
      assert.ok(row.idsPerSecond > 0, row.name);
      assert.equal(row.duplicates, 0, row.name);
    }
    // gRPC beside HTTP on one node: calls were answered, none failed, no ID twice.
    assert.ok(figures.grpc.grpcNextCallsPerSecond > 0);
    assert.equal(figures.grpc.errors, 0);
    assert.equal(figures.grpc.duplicates, 0);
  });
});
