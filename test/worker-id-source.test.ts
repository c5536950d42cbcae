import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { isFrondError } from '../src/core/errors.js';
import { FileWorkerIdSource, WORKER_FILE } from '../src/worker-ids/file/file-worker-id-source.js';
import { tempDir } from './support/frond-process.js';
import { describeWorkerIdSource } from './worker-id-source.suite.js';

describeWorkerIdSource(
  'file',
  async (_t, dir) => new FileWorkerIdSource(dir),
  () => tempDir('frond-worker-'),
);

describe('FileWorkerIdSource', () => {
  it('uses --worker-id when given, and keeps the recorded time when the worker ID changes', async () => {
    const dir = tempDir();
    const first = new FileWorkerIdSource(dir, { workerId: 5 });
    assert.equal((await first.acquire()).workerId, 5);
    await first.record(1_800_000_000_000);
    const second = new FileWorkerIdSource(dir, { workerId: 9 });
    assert.deepEqual(await second.acquire(), { workerId: 9, lastTimestamp: 1_800_000_000_000 });
  });

  it('keeps a random worker ID chosen on first start', async () => {
    const dir = tempDir();
    const first = await new FileWorkerIdSource(dir, { random: () => 0.5 }).acquire();
    assert.equal(first.workerId, 512);
    const again = await new FileWorkerIdSource(dir, { random: () => 0.1 }).acquire();
    assert.equal(again.workerId, 512);
    assert.deepEqual(JSON.parse(readFileSync(join(dir, WORKER_FILE), 'utf8')), {
      workerId: 512,
      lastTimestamp: 0,
    });
  });

  it('refuses a damaged file with a message that says what to do, instead of guessing', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, WORKER_FILE), '{"workerId": 3, "lastTim');
    await assert.rejects(
      new FileWorkerIdSource(dir).acquire(),
      (error) => isFrondError(error, 'INVALID_CONFIG') && /damaged/.test(error.message),
    );
  });
});
