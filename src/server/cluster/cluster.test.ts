import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { planWorkerIds, workerDataDir } from './cluster.js';

function dataDirWith(files: Record<number, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'frond-cluster-'));
  for (const [index, text] of Object.entries(files)) {
    mkdirSync(workerDataDir(dir, Number(index)), { recursive: true });
    writeFileSync(join(workerDataDir(dir, Number(index)), 'snowflake-worker.json'), text);
  }
  return dir;
}

describe('planWorkerIds', () => {
  it('refuses more workers than the layout has worker IDs, and fills every one when they are as many', () => {
    // One worker bit: IDs 0 and 1. A third worker drew at random for ever (a hang at start).
    assert.throws(
      () => planWorkerIds('/nowhere', undefined, 3, undefined, 1),
      (error: Error) => /--workers 3 needs 3 worker IDs, and the layout has 2/.test(error.message),
    );
    // A draw that always lands on a taken ID still ends, on the free one.
    assert.deepEqual(planWorkerIds('/nowhere', undefined, 2, () => 0, 1).sort(), [0, 1]);
  });

  it('gives worker i the ID --worker-id + i, and refuses IDs past 1023', () => {
    assert.deepEqual(planWorkerIds('/nowhere', 1020, 4), [1020, 1021, 1022, 1023]);
    assert.throws(() => planWorkerIds('/nowhere', 1021, 4), { code: 'INVALID_CONFIG' });
  });

  it("keeps the IDs in the workers' files and draws unused ones for the others, even when the draw repeats", () => {
    const dir = dataDirWith({ 1: '{"workerId":7,"lastTimestamp":0}' });
    const draws = [7, 7, 9, 9, 9, 3];
    const ids = planWorkerIds(dir, undefined, 3, () => draws.shift() as number);
    assert.deepEqual(ids, [9, 7, 3]);
  });

  it('refuses two worker files holding the same ID', () => {
    const dir = dataDirWith({ 0: '{"workerId":5,"lastTimestamp":0}', 1: '{"workerId":5,"lastTimestamp":0}' });
    assert.throws(
      () => planWorkerIds(dir, undefined, 2),
      /worker-1\/snowflake-worker.json holds worker ID 5/,
    );
  });
});
