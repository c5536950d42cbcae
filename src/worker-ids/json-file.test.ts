import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { FileWorkerIdSource, WORKER_FILE } from './file/file-worker-id-source.js';
import { readJsonFile, removeTemporaries, writeJsonAtomically } from './json-file.js';

describe('writeJsonAtomically (issue 16, item 10)', () => {
  it('never follows a symlink planted at the temporary name, and leaves no temporary behind', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'frond-json-'));
    const victim = join(dir, 'victim');
    writeFileSync(victim, 'precious\n');
    const path = join(dir, WORKER_FILE);
    symlinkSync(victim, `${path}.tmp`);
    const source = new FileWorkerIdSource(dir, { workerId: 7 });
    await source.acquire();
    await source.record(Date.now() + 2000);
    await writeJsonAtomically(path, { workerId: 7, lastTimestamp: Date.now() + 3000 });
    assert.equal(readFileSync(victim, 'utf8'), 'precious\n');
    assert.deepEqual((await readJsonFile(path))?.value, { workerId: 7, lastTimestamp: readBack(path) });
    // The planted link went at acquire (the link, not its target); no temporary file is left.
    assert.deepEqual(readdirSync(dir).sort(), [WORKER_FILE, 'victim']);
  });

  it('creates each temporary file exclusively under a new random name', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'frond-json-'));
    const path = join(dir, 'a.json');
    await writeJsonAtomically(path, { n: 1 });
    await writeJsonAtomically(path, { n: 2 });
    assert.deepEqual((await readJsonFile(path))?.value, { n: 2 });
    writeFileSync(`${path}.0123456789abcdef.tmp`, 'left by a crash');
    writeFileSync(join(dir, 'a.json.other.tmp'), 'not ours');
    await removeTemporaries(path);
    assert.deepEqual(readdirSync(dir).sort(), ['a.json', 'a.json.other.tmp']);
  });
});

function readBack(path: string): number {
  return (JSON.parse(readFileSync(path, 'utf8')) as { lastTimestamp: number }).lastTimestamp;
}
