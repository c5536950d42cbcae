import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { MemoryStore } from '../../../test/support/memory-store.js';
import type { LogEvent, Logger } from '../../core/logger.js';
import { FencedStore } from './fenced-store.js';
import { HighWaterFile } from './high-water-file.js';

const dataDir = () => mkdtempSync(join(tmpdir(), 'frond-hand-back-'));
const SKIP = 1_000_000_000;

function recording(): Logger & { events: LogEvent[] } {
  const events: LogEvent[] = [];
  return { events, log: (_level, event) => events.push(event) };
}

/** The tail of the last two grants of `tag`, as a retired buffer answers it. */
async function grantTwo(fenced: FencedStore, tag: string) {
  const first = await fenced.advance(tag);
  const second = await fenced.advance(tag);
  assert.ok(first && second);
  return { start: first.maxId - BigInt(first.step), to: second.maxId };
}

describe('FencedStore.handBack', () => {
  it('lowers the data dir record with the table: the next start goes on from the tail without a fence', async () => {
    const dir = dataDir();
    const store = new MemoryStore();
    await store.addTag({ tag: 't', step: 10, start: 1n });
    const fenced = new FencedStore(store.primitive, { dataDir: dir, fenceSkip: SKIP, node: 'n1:1' });
    const { to } = await grantTwo(fenced, 't'); // [1,11) and [11,21); say 1..5 were served
    const result = await fenced.handBack(
      't',
      [
        { start: 6n, end: 11n, reason: 'unsafe_hand_back' },
        { start: 11n, end: 21n, reason: 'unsafe_hand_back' },
      ],
      to,
    );
    assert.deepEqual(result.returned, { from: 6n, to: 21n });
    assert.equal(new HighWaterFile(dir, 'memory:').state.tags.get('t'), 6n, 'the record, read again');
    const logger = recording();
    const restarted = new FencedStore(store.primitive, { dataDir: dir, fenceSkip: SKIP, logger });
    const next = await restarted.advance('t');
    assert.equal(next?.maxId, 16n, 'the next grant starts at the tail');
    assert.ok(!logger.events.includes('segment.fence_needed'), 'no fence for a hand-back');
    assert.deepEqual(await store.listGaps('t'), [], 'and no crash reported');
  });

  it('a grant thrown away before a fence (the database went back) is a fence gap above the record', async () => {
    const dir = dataDir();
    const store = new MemoryStore();
    await store.addTag({ tag: 't', step: 10, start: 1n });
    const fenced = new FencedStore(store.primitive, { dataDir: dir, fenceSkip: SKIP });
    await grantTwo(fenced, 't'); // [1,11) and [11,21)
    // A restore from when the row was at 16: its next grant [16,26) starts below this node's 21.
    const row = store.rows.get('t');
    assert.ok(row);
    row.maxId = 16n;
    const next = await fenced.advance('t');
    assert.equal(next?.maxId, 26n + BigInt(SKIP) + 10n, 'served above the fence');
    // [16,21) may have been issued (by this node); [21,26) never was, and the fence skipped the rest.
    assert.deepEqual(
      (await store.listGaps('t')).map((gap) => [gap.start, gap.end, gap.reason, gap.node]),
      [
        [21n, 26n, 'fence', 'fence'],
        [26n, 26n + BigInt(SKIP), 'fence', 'fence'],
      ],
    );
  });

  it('still fences for a real loss after a hand-back', async () => {
    const dir = dataDir();
    const store = new MemoryStore();
    await store.addTag({ tag: 't', step: 10, start: 1n });
    const fenced = new FencedStore(store.primitive, { dataDir: dir, fenceSkip: SKIP });
    const { to } = await grantTwo(fenced, 't');
    await fenced.handBack('t', [{ start: 15n, end: 21n, reason: 'unsafe_hand_back' }], to);
    const again = await fenced.advance('t'); // [15,25): served
    assert.equal(again?.maxId, 25n);
    // The database goes back to before that grant (a restore): max_id 15 again.
    const row = store.rows.get('t');
    assert.ok(row);
    row.maxId = 15n;
    const logger = recording();
    const restarted = new FencedStore(store.primitive, { dataDir: dir, fenceSkip: SKIP, logger });
    const after = await restarted.advance('t');
    assert.ok(logger.events.includes('segment.fence_needed'));
    assert.ok(after && after.maxId - BigInt(after.step) >= 25n, 'never below what was served');
  });

  it('records the tail as gaps when the table moved on, and the record stays safe', async () => {
    const dir = dataDir();
    const store = new MemoryStore();
    await store.addTag({ tag: 't', step: 10, start: 1n });
    const fenced = new FencedStore(store.primitive, { dataDir: dir, fenceSkip: SKIP, node: 'n1:1' });
    const { to } = await grantTwo(fenced, 't');
    await store.advance('t'); // another node: [21,31)
    const result = await fenced.handBack('t', [{ start: 12n, end: 21n, reason: 'unsafe_hand_back' }], to);
    assert.equal(result.returned, undefined);
    assert.deepEqual(
      (await store.listGaps('t')).map((gap) => [gap.start, gap.end, gap.reason, gap.node]),
      [[12n, 21n, 'unsafe_hand_back', 'n1:1']],
    );
    const logger = recording();
    const restarted = new FencedStore(store.primitive, { dataDir: dir, fenceSkip: SKIP, logger });
    assert.equal((await restarted.advance('t'))?.maxId, 41n);
    assert.ok(!logger.events.includes('segment.fence_needed'));
  });

  it('reports what a process held when it died as crash gaps, once', async () => {
    const dir = dataDir();
    const store = new MemoryStore();
    await store.addTag({ tag: 'k', step: 10, start: 1n });
    const given: bigint[] = [];
    const crashed = new FencedStore(store.primitive, { dataDir: dir, fenceSkip: SKIP, node: 'n1:1' });
    await crashed.advance('k'); // [1,11)
    await grantTwo(crashed, 'k'); // [11,21), [21,31): the last two are what a buffer holds
    // No hand-back: the process was killed. The next start reports at its first advance.
    const observer = { idsGivenUp: (_tag: string, _reason: string, count: bigint) => given.push(count) };
    const restarted = new FencedStore(store.primitive, {
      dataDir: dir,
      fenceSkip: SKIP,
      node: 'n1:1',
      observer,
    });
    await restarted.advance('k'); // [31,41)
    for (let i = 0; i < 20 && given.length === 0; i++) await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(
      (await store.listGaps('k')).map((gap) => [gap.start, gap.end, gap.reason]),
      [
        [11n, 21n, 'crash'],
        [21n, 31n, 'crash'],
      ],
    );
    assert.deepEqual(given, [20n]);
    // The report is released: a third start reports only what the second held ([31,41)).
    const third = new FencedStore(store.primitive, { dataDir: dir, fenceSkip: SKIP, node: 'n1:1' });
    await third.advance('k');
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(
      (await store.listGaps('k')).map((gap) => [gap.start, gap.end]),
      [
        [11n, 21n],
        [21n, 31n],
        [31n, 41n],
      ],
    );
  });

  it('leaves nothing to report after a clean stop, across a journal fold', async () => {
    const dir = dataDir();
    const store = new MemoryStore();
    await store.addTag({ tag: 'c', step: 10, start: 1n });
    for (let i = 0; i < 60; i++) await store.addTag({ tag: `f${i}`, step: 1, start: 1n });
    const fenced = new FencedStore(store.primitive, { dataDir: dir, fenceSkip: SKIP });
    const { to } = await grantTwo(fenced, 'c');
    // Enough lines for the journal to be folded into the file (4,096).
    for (let i = 0; i < 4_200; i++) await fenced.advance(`f${i % 60}`);
    for (let i = 0; i < 60; i++) await fenced.handBack(`f${i}`, [], (await store.tag(`f${i}`))?.maxId ?? 0n);
    await fenced.handBack('c', [{ start: 15n, end: 21n, reason: 'unsafe_hand_back' }], to);
    const water = new HighWaterFile(dir, 'memory:');
    assert.equal(water.state.tags.get('c'), 15n);
    assert.equal(water.state.held.size, 0, 'nothing held');
    const restarted = new FencedStore(store.primitive, { dataDir: dir, fenceSkip: SKIP });
    await restarted.advance('c');
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(await store.listGaps('c'), []);
  });

  it('a --workers node whose processes hand back one after another does not fence at its next start', async () => {
    const node = dataDir();
    const store = new MemoryStore();
    await store.addTag({ tag: 'w', step: 10, start: 1n });
    const open = (i: number, logger?: Logger) =>
      new FencedStore(store.primitive, {
        dataDir: join(node, `worker-${i}`),
        fenceSkip: SKIP,
        ...(logger && { logger }),
      });
    const a = open(0);
    const b = open(1);
    await a.advance('w'); // [1,11): 1..4 served
    await b.advance('w'); // [11,21): nothing served
    // b stops first: its whole segment goes back, and then a's tail ends where the table is.
    assert.deepEqual(
      (await b.handBack('w', [{ start: 11n, end: 21n, reason: 'unsafe_hand_back' }], 21n)).returned,
      {
        from: 11n,
        to: 21n,
      },
    );
    assert.deepEqual(
      (await a.handBack('w', [{ start: 5n, end: 11n, reason: 'unsafe_hand_back' }], 11n)).returned,
      {
        from: 5n,
        to: 11n,
      },
    );
    assert.equal(store.rows.get('w')?.maxId, 5n);
    const logger = recording();
    const again = [open(0, logger), open(1, logger)];
    assert.equal((await again[0]?.advance('w'))?.maxId, 15n);
    assert.equal((await again[1]?.advance('w'))?.maxId, 25n);
    assert.ok(!logger.events.includes('segment.fence_needed'), 'no fence after the cascade');
    // And the record still covers what was served: a restore to before the grants fences.
    const row = store.rows.get('w');
    assert.ok(row);
    row.maxId = 1n;
    const restored = open(0, logger);
    const after = await restored.advance('w');
    assert.ok(logger.events.includes('segment.fence_needed'));
    assert.ok(after && after.maxId - BigInt(after.step) >= 25n);
  });
});
