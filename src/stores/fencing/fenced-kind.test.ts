import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { MemoryStore } from '../../../test/support/memory-store.js';
import { isFrondError } from '../../core/errors.js';
import { FencedStore, scopeOf } from './fenced-store.js';
import { HighWaterFile } from './high-water-file.js';

const dataDir = () => mkdtempSync(join(tmpdir(), 'frond-kind-'));

describe('a node keeps the kind of every tag it served', () => {
  it('records the kind with each grant, across a journal fold and a restart', async () => {
    const dir = dataDir();
    const water = new HighWaterFile(dir, 's');
    await water.record('plain', 100n, 0, undefined, '');
    await water.record('opaque', 100n, 0, undefined, 'opaque bits:20 k');
    for (let i = 0; i < 4_200; i++) await water.record(`filler-${i % 50}`, BigInt(i), 0, undefined, '');
    const again = new HighWaterFile(dir, 's');
    assert.equal(again.state.kinds.get('plain'), '');
    assert.equal(again.state.kinds.get('opaque'), 'opaque bits:20 k');
    // Another process of the node (--workers) learns them too.
    const sibling = new HighWaterFile(join(dir, 'worker-1'), 's', { nodeDir: dir });
    assert.equal(sibling.state.kinds.get('opaque'), 'opaque bits:20 k');
  });

  it('refuses a grant of another kind than the one it served, whichever way it changed', async () => {
    const dir = dataDir();
    const store = new MemoryStore();
    const fenced = new FencedStore(store.primitive, { dataDir: dir, fenceSkip: 1_000_000_000 });
    await store.addTag({ tag: 't', step: 10, start: 1n });
    assert.ok(await fenced.advance('t'));
    // By hand: the rows changed so that the store grants the tag as opaque.
    store.opaque.set('t', { domain: 'bits:20', keyCheck: 'k' });
    await assert.rejects(
      fenced.advance('t'),
      (error) => isFrondError(error, 'INVALID_CONFIG') && /served plain IDs on this node/.test(error.message),
    );
    // A restarted node still knows.
    const restarted = new FencedStore(store.primitive, { dataDir: dir, fenceSkip: 1_000_000_000 });
    await assert.rejects(restarted.advance('t'), (error) => isFrondError(error, 'INVALID_CONFIG'));
    store.opaque.delete('t');
    assert.ok(await restarted.advance('t'), 'plain again, as it was served');
  });

  it('names a formatted kind by its format and zone when the store grants another', async () => {
    const store = new MemoryStore();
    const fenced = new FencedStore(store.primitive, { dataDir: dataDir(), fenceSkip: 1_000_000_000 });
    const format = { format: 'ORD-{yy}{MM}{dd}-{seq:6}', timeZone: 'Asia/Kolkata' };
    await store.addTag({ tag: 'o', step: 10, start: 1n, format });
    assert.deepEqual((await fenced.advance('o'))?.kind, { opaque: null, format });
    // By hand: its frond_tag_formats row deleted.
    store.formats.delete('o');
    await assert.rejects(
      fenced.advance('o'),
      (error) =>
        isFrondError(error, 'INVALID_CONFIG') &&
        error.message.includes(
          'served formatted (ORD-{yy}{MM}{dd}-{seq:6}, Asia/Kolkata) IDs on this node and the store now grants it plain',
        ),
    );
    store.formats.set('o', { ...format, timeZone: 'UTC' });
    await assert.rejects(fenced.advance('o'), (error) =>
      /now grants it formatted \(ORD-\{yy\}\{MM\}\{dd\}-\{seq:6\}, UTC\)/.test(String(error)),
    );
  });

  it('names a SQLite file the same way however it is spelled', () => {
    const root = dataDir();
    mkdirSync(join(root, 'data'));
    symlinkSync(join(root, 'data'), join(root, 'link'));
    const absolute = scopeOf(`sqlite:${join(root, 'data', 'frond.db')}`);
    assert.equal(scopeOf(`sqlite:${join(root, 'link', 'frond.db')}`), absolute);
    assert.equal(scopeOf(`sqlite:${relative(process.cwd(), join(root, 'data', 'frond.db'))}`), absolute);
    assert.equal(scopeOf('postgres://frond@db1:5432/ids'), 'postgres:ids');
  });

  it('folds in the tags a SQLite data dir kept under an older spelling', async () => {
    const dir = dataDir();
    await new HighWaterFile(dir, 'sqlite:data/frond.db').record('orders', 3_001n, 0, undefined);
    const now = new HighWaterFile(dir, scopeOf(`sqlite:${join(dir, 'frond.db')}`), {
      alsoTagsOf: (scope) => scope.startsWith('sqlite:'),
    });
    assert.equal(now.state.tags.get('orders'), 3_001n);
  });
});
