import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { HighWaterFile } from '../../stores/fencing/high-water-file.js';
import { workerDataDir } from './cluster.js';

describe('the high-water of a node with --workers', () => {
  it("is one record per node: a worker opening its file knows what the others and the node's own files hold", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'frond-cluster-hw-'));
    await new HighWaterFile(workerDataDir(dataDir, 0), 'postgres:ids').record('orders', 5_000n, 4, 'db-4');
    await new HighWaterFile(dataDir, 'postgres:ids').record('users', 300n, 2, 'db-2');
    await new HighWaterFile(workerDataDir(dataDir, 11), 'postgres:ids').record('orders', 200n, 1, 'db-1');
    const worker = new HighWaterFile(workerDataDir(dataDir, 1), 'postgres:ids');
    assert.equal(worker.state.tags.get('orders'), 5_000n);
    assert.equal(worker.state.tags.get('users'), 300n);
    assert.equal(worker.state.epoch, 4);
    assert.equal(worker.state.identity, 'db-4');
    assert.deepEqual(worker.unreadable, []);
  });
});
