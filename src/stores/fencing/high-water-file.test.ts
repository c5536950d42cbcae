import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { HIGH_WATER_FILE, HIGH_WATER_JOURNAL, HighWaterFile } from './high-water-file.js';

const dataDir = () => mkdtempSync(join(tmpdir(), 'frond-hw-'));
const journalOf = (dir: string) => readFileSync(join(dir, HIGH_WATER_JOURNAL), 'utf8');

describe('HighWaterFile', () => {
  it('remembers every record across a restart, and never goes down', async () => {
    const dir = dataDir();
    const first = new HighWaterFile(dir, 'postgres://db/ids');
    await first.record('a', 1000n, 1, 'db-1');
    await first.record('b', 2n ** 63n - 1n, 1, 'db-1');
    await first.record('a', 500n, 1, 'db-1');
    const again = new HighWaterFile(dir, 'postgres://db/ids');
    assert.equal(again.state.tags.get('a'), 1000n);
    assert.equal(again.state.tags.get('b'), 2n ** 63n - 1n);
    assert.equal(again.state.epoch, 1);
    assert.equal(again.state.identity, 'db-1');
  });

  it('writes one short line per record, not the whole file (the file is written whole only when the journal is folded in)', async () => {
    const dir = dataDir();
    const water = new HighWaterFile(dir, 's');
    for (let i = 0; i < 2_000; i++) await water.record(`tag-${i}`, 1000n, 0, undefined);
    const before = journalOf(dir).length;
    await water.record('tag-7', 2000n, 0, undefined);
    const line = journalOf(dir).slice(before);
    assert.ok(line.length < 100, `one record appended ${line.length} bytes`);
    assert.deepEqual(JSON.parse(line), { store: 's', epoch: 0, tag: 'tag-7', max: '2000' });
  });

  it('folds the journal into the file past 4,096 lines, keeping every value and other stores', async () => {
    const dir = dataDir();
    const other = new HighWaterFile(dir, 'other');
    await other.record('x', 7n, 3, 'db-9');
    const water = new HighWaterFile(dir, 's');
    for (let i = 0; i < 5_000; i++) await water.record(`tag-${i % 100}`, BigInt(i), 2, 'db-2');
    assert.ok(journalOf(dir).split('\n').length < 4_096, 'the journal was emptied');
    const file = JSON.parse(readFileSync(join(dir, HIGH_WATER_FILE), 'utf8'));
    assert.equal(file.stores.other.tags.x, '7');
    const again = new HighWaterFile(dir, 's');
    assert.equal(again.state.tags.get('tag-99'), 4999n);
    assert.equal(again.state.tags.get('tag-0'), 4900n);
    assert.equal(new HighWaterFile(dir, 'other').state.tags.get('x'), 7n);
  });

  it('leaves out a last line cut short by a crash, and appends after it cleanly', async () => {
    const dir = dataDir();
    const water = new HighWaterFile(dir, 's');
    await water.record('a', 10n, 0, undefined);
    appendFileSync(join(dir, HIGH_WATER_JOURNAL), '{"store":"s","epoch":0,"tag":"a","ma');
    const restarted = new HighWaterFile(dir, 's');
    assert.equal(restarted.state.tags.get('a'), 10n);
    await restarted.record('b', 20n, 0, undefined);
    const again = new HighWaterFile(dir, 's');
    assert.equal(again.state.tags.get('a'), 10n);
    assert.equal(again.state.tags.get('b'), 20n);
  });

  it('refuses to start on a journal line that cannot be read before the last (never guessed at)', async () => {
    const dir = dataDir();
    const water = new HighWaterFile(dir, 's');
    await water.record('a', 10n, 0, undefined);
    writeFileSync(join(dir, HIGH_WATER_JOURNAL), `garbage\n${journalOf(dir)}`);
    assert.throws(
      () => new HighWaterFile(dir, 's'),
      (error: Error & { code?: string }) =>
        error.code === 'INVALID_CONFIG' && /segment-high-water\.log line 1 is unreadable/.test(error.message),
    );
  });
});
