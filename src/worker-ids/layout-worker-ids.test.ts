import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { isFrondError } from '../core/errors.js';
import { layoutOf } from '../core/snowflake-layout.js';
import { FileWorkerIdSource, WORKER_FILE } from './file/file-worker-id-source.js';
import { workerIdCandidates } from './lease/worker-id-candidates.js';

const dir = () => mkdtempSync(join(tmpdir(), 'frond-layout-ids-'));

describe("worker IDs up to the layout's worker bits", () => {
  it("lists every worker ID of the layout as a lease candidate, Leaf's 1024 by default", () => {
    const none = {
      taken: new Set<number>(),
      lastTimestamps: new Map<number, number>(),
      preferred: undefined,
    };
    assert.equal(workerIdCandidates(none).length, 1024);
    assert.deepEqual(workerIdCandidates({ ...none, maxWorkerId: 3 }), [0, 1, 2, 3]);
    const wide = layoutOf('39+16+8', 10, 0);
    const candidates = workerIdCandidates({ ...none, maxWorkerId: wide.maxWorkerId, preferred: 65_535 });
    assert.equal(candidates.length, 65_536);
    assert.equal(candidates[0], 65_535, 'a preferred ID inside the bits comes first');
    assert.deepEqual(workerIdCandidates({ ...none, maxWorkerId: 3, preferred: 4 }), [0, 1, 2, 3]);
  });

  it('draws a first worker ID from the whole range of the bits, and refuses a file holding one past them', async () => {
    const wide = new FileWorkerIdSource(dir(), { maxWorkerId: 65_535, random: () => 0.999_99 });
    assert.equal((await wide.acquire()).workerId, 65_535);
    const leaf = new FileWorkerIdSource(dir(), { random: () => 0.999_99 });
    assert.equal((await leaf.acquire()).workerId, 1023);
    // A data dir of a node with wider worker bits, started with Leaf's.
    const old = dir();
    writeFileSync(join(old, WORKER_FILE), JSON.stringify({ workerId: 40_000, lastTimestamp: 1 }));
    await assert.rejects(
      new FileWorkerIdSource(old).acquire(),
      (error: Error) =>
        isFrondError(error, 'INVALID_CONFIG') &&
        /holds worker ID 40000, past 1023, the largest of the layout's worker bits/.test(error.message),
    );
    assert.equal((await new FileWorkerIdSource(old, { maxWorkerId: 65_535 }).acquire()).workerId, 40_000);
  });
});
