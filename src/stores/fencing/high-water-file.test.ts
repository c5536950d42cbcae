import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
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

/** A disk that fills up: `append` writes part of the text and throws ENOSPC while `full` says so. */
function fullDisk() {
  const disk = {
    full: false,
    /** How many cuts fail before one works. */
    failCuts: 0,
    appends: 0,
    cuts: 0,
    io: {
      async append(path: string, text: string) {
        disk.appends++;
        if (disk.full) {
          appendFileSync(path, text.slice(0, Math.max(1, Math.floor(text.length / 2))));
          throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
        }
        appendFileSync(path, text);
      },
      async truncate(path: string, length: number) {
        disk.cuts++;
        if (disk.failCuts > 0) {
          disk.failCuts--;
          throw Object.assign(new Error('EIO: i/o error, ftruncate'), { code: 'EIO' });
        }
        truncateSync(path, length);
      },
    },
  };
  return disk;
}

const everyLineWhole = (dir: string) => {
  const lines = journalOf(dir).split('\n');
  assert.equal(lines.pop(), '', 'the journal ends with a newline');
  for (const line of lines) assert.doesNotThrow(() => JSON.parse(line), `a whole line: ${line}`);
};

describe('HighWaterFile on a full disk', () => {
  it('cuts a torn append back at once: the lines tried again start on their own line, and a restart reads every acknowledged record', async () => {
    const dir = dataDir();
    const disk = fullDisk();
    const water = new HighWaterFile(dir, 's', { io: disk.io });
    await water.record('a', 100n, 1, 'db-1');
    disk.full = true;
    await assert.rejects(water.record('b', 200n, 1, 'db-1'), /ENOSPC/);
    await assert.rejects(water.record('c', 300n, 1, 'db-1'), /ENOSPC/);
    assert.equal(disk.cuts, 2, 'each failed append was cut back');
    everyLineWhole(dir);
    disk.full = false;
    await water.record('d', 400n, 1, 'db-1');
    everyLineWhole(dir);
    // b and c were never acknowledged, but the write that acknowledged d carried them again.
    for (const reopened of [new HighWaterFile(dir, 's'), new HighWaterFile(dir, 's')]) {
      assert.deepEqual(
        [...reopened.state.tags],
        [
          ['a', 100n],
          ['b', 200n],
          ['c', 300n],
          ['d', 400n],
        ],
      );
      assert.equal(reopened.state.epoch, 1);
    }
  });

  it('when the cut fails too, the next write cuts first and appends nothing before that works', async () => {
    const dir = dataDir();
    const disk = fullDisk();
    const water = new HighWaterFile(dir, 's', { io: disk.io });
    await water.record('a', 100n, 0, undefined);
    disk.full = true;
    disk.failCuts = 2;
    await assert.rejects(water.record('b', 200n, 0, undefined), /ENOSPC/);
    assert.match(journalOf(dir), /\n\{"store":"s","ep/, 'the fragment is still there');
    disk.full = false;
    const appends = disk.appends;
    // The cut fails again: nothing may be appended after the fragment.
    await assert.rejects(water.record('c', 300n, 0, undefined), /EIO/);
    assert.equal(disk.appends, appends);
    await water.record('d', 400n, 0, undefined);
    everyLineWhole(dir);
    const reopened = new HighWaterFile(dir, 's');
    assert.deepEqual([...reopened.state.tags].sort(), [
      ['a', 100n],
      ['b', 200n],
      ['c', 300n],
      ['d', 400n],
    ]);
  });

  it('a journal whose torn append was followed by others (as before the cut existed) reads again, and no record is lost', async () => {
    const dir = dataDir();
    const water = new HighWaterFile(dir, 's');
    await water.record('a', 100n, 2, 'db-é');
    // An append cut short inside a two-byte character, never cut back, then more appends after it.
    const torn = Buffer.from('{"store":"s","epoch":2,"identity":"db-é');
    appendFileSync(join(dir, HIGH_WATER_JOURNAL), torn.subarray(0, torn.length - 1));
    await water.record('b', 200n, 2, 'db-é');
    appendFileSync(join(dir, HIGH_WATER_JOURNAL), '{"st');
    await water.record('c', 300n, 2, 'db-é');
    await water.record('d', 400n, 2, 'db-é');
    const reopened = new HighWaterFile(dir, 's');
    assert.deepEqual(
      [...reopened.state.tags],
      [
        ['a', 100n],
        ['b', 200n],
        ['c', 300n],
        ['d', 400n],
      ],
    );
    assert.equal(reopened.state.identity, 'db-é');
    await reopened.record('e', 500n, 2, 'db-é');
    assert.equal(new HighWaterFile(dir, 's').state.tags.get('e'), 500n);
  });

  it('empties the journal on the next write when the cut after a fold fails', async () => {
    const dir = dataDir();
    const disk = fullDisk();
    const water = new HighWaterFile(dir, 's', { io: disk.io });
    for (let i = 0; i < 4_096; i++) await water.record(`tag-${i % 10}`, BigInt(i), 0, undefined);
    disk.failCuts = 1;
    await assert.rejects(water.record('tag-0', 5_000n, 0, undefined), /EIO/);
    await water.record('tag-1', 5_001n, 0, undefined);
    assert.equal(journalOf(dir).split('\n').length, 2, 'one line in the journal');
    const reopened = new HighWaterFile(dir, 's');
    assert.equal(reopened.state.tags.get('tag-0'), 5_000n);
    assert.equal(reopened.state.tags.get('tag-1'), 5_001n);
    assert.equal(reopened.state.tags.get('tag-9'), 4_089n);
  });

  it('keeps a whole record that lost only its newline, and the one after it', async () => {
    const dir = dataDir();
    const water = new HighWaterFile(dir, 's');
    appendFileSync(join(dir, HIGH_WATER_JOURNAL), '{"store":"s","epoch":0,"tag":"a","max":"100"}');
    await water.record('b', 200n, 0, undefined);
    const reopened = new HighWaterFile(dir, 's');
    assert.equal(reopened.state.tags.get('a'), 100n);
    assert.equal(reopened.state.tags.get('b'), 200n);
  });

  it('still refuses a line that ends without a whole record: an acknowledged line damaged, not a torn append', async () => {
    for (const damaged of [
      '{"store":"s","epoch":0,"tag":"a","max":"10',
      '{"store":"s","epoch":0,"tag":"a","max":"10{"store":"s","ep',
      'xx{"store":"s","epoch":0,"tag":"b","max":"20"}',
      '{"store":"s","epoch":0,"tag":"a","max":"10"}}',
    ]) {
      const dir = dataDir();
      const water = new HighWaterFile(dir, 's');
      await water.record('a', 10n, 0, undefined);
      writeFileSync(join(dir, HIGH_WATER_JOURNAL), `${damaged}\n${journalOf(dir)}`);
      assert.throws(
        () => new HighWaterFile(dir, 's'),
        (error: Error & { code?: string }) =>
          error.code === 'INVALID_CONFIG' &&
          /segment-high-water\.log line 1 is unreadable/.test(error.message),
        damaged,
      );
    }
  });
});

describe('HighWaterFile of a node with --workers', () => {
  const nodeDir = () => {
    const dir = dataDir();
    for (const worker of ['worker-0', 'worker-1', 'worker-2']) mkdirSync(join(dir, worker));
    return dir;
  };

  it('knows at open what every process of the node recorded: its siblings and the node dir', async () => {
    const dir = nodeDir();
    const zero = new HighWaterFile(join(dir, 'worker-0'), 's');
    await zero.record('a', 1000n, 3, 'db-3');
    await zero.record('b', 50n, 3, 'db-3');
    await new HighWaterFile(join(dir, 'worker-0'), 'other').record('a', 9999n, 9, 'db-9');
    const top = new HighWaterFile(dir, 's');
    await top.record('b', 70n, 2, 'db-2');
    await top.record('c', 5n, 2, 'db-2');
    const one = new HighWaterFile(join(dir, 'worker-1'), 's');
    await one.record('a', 400n, 1, 'db-1');
    await one.record('d', 8n, 1, 'db-1');
    const expected = [
      ['a', 1000n],
      ['b', 70n],
      ['c', 5n],
      ['d', 8n],
    ];
    const reopened = new HighWaterFile(join(dir, 'worker-1'), 's');
    assert.deepEqual([...reopened.state.tags].sort(), expected);
    assert.equal(reopened.state.epoch, 3);
    assert.equal(reopened.state.identity, 'db-3');
    // A worker dir that never held anything, and the node dir itself run as one process.
    assert.deepEqual([...new HighWaterFile(join(dir, 'worker-2'), 's').state.tags].sort(), expected);
    assert.deepEqual([...new HighWaterFile(dir, 's').state.tags].sort(), expected);
    assert.equal(new HighWaterFile(join(dir, 'worker-2'), 'other').state.tags.get('a'), 9999n);
  });

  it('reads what a sibling folded into its file, and an explicit nodeDir', async () => {
    const dir = nodeDir();
    const zero = new HighWaterFile(join(dir, 'worker-0'), 's');
    for (let i = 0; i < 5_000; i++) await zero.record(`tag-${i % 10}`, BigInt(i), 0, undefined);
    const elsewhere = join(dataDir(), 'process-1');
    const one = new HighWaterFile(elsewhere, 's', { nodeDir: dir });
    assert.equal(one.state.tags.get('tag-9'), 4999n);
    assert.equal(new HighWaterFile(elsewhere, 's').state.tags.get('tag-9'), undefined);
  });

  it("never writes a sibling's files, and goes on past a sibling's torn or unreadable ones (its own still refuse)", async () => {
    const dir = nodeDir();
    const zero = new HighWaterFile(join(dir, 'worker-0'), 's');
    await zero.record('a', 1000n, 0, undefined);
    // An append in progress in worker-0 (its last line), and a damaged line in worker-2.
    appendFileSync(join(dir, 'worker-0', HIGH_WATER_JOURNAL), '{"store":"s","epoch":0,"tag":"a","max":"20');
    const two = new HighWaterFile(join(dir, 'worker-2'), 's');
    await two.record('b', 77n, 0, undefined);
    await two.record('c', 88n, 0, undefined);
    const twoJournal = join(dir, 'worker-2', HIGH_WATER_JOURNAL);
    writeFileSync(twoJournal, `garbage\n${readFileSync(twoJournal, 'utf8')}`);
    writeFileSync(join(dir, 'worker-2', HIGH_WATER_FILE), '{"version":');
    const before = [
      readFileSync(join(dir, 'worker-0', HIGH_WATER_JOURNAL)),
      readFileSync(twoJournal),
      readFileSync(join(dir, 'worker-2', HIGH_WATER_FILE)),
    ];

    const one = new HighWaterFile(join(dir, 'worker-1'), 's');
    assert.equal(one.state.tags.get('a'), 1000n);
    assert.equal(one.state.tags.get('b'), 77n);
    assert.equal(one.state.tags.get('c'), 88n);
    assert.equal(one.unreadable.length, 2, one.unreadable.join('; '));
    await one.record('d', 1n, 0, undefined);
    assert.deepEqual(
      [
        readFileSync(join(dir, 'worker-0', HIGH_WATER_JOURNAL)),
        readFileSync(twoJournal),
        readFileSync(join(dir, 'worker-2', HIGH_WATER_FILE)),
      ],
      before,
    );
    assert.throws(() => new HighWaterFile(join(dir, 'worker-2'), 's'), /unreadable/);
  });
});
