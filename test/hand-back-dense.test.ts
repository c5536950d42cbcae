// --dense-tag: no look-ahead on the tags it names (the next segment loads when the current one
// runs out), a warning at start for a name the table does not hold, refused when not a tag name.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseServeArgs } from '../src/cli/serve.js';
import { serveConfig } from '../src/cli/serve-config.js';
import { isFrondError } from '../src/core/errors.js';
import { runFrond, startFrond, tempDir } from './support/frond-process.js';
import { randomTag } from './support/random-tag.js';

describe('--dense-tag', () => {
  it('is read from flags (repeated), FROND_DENSE_TAG and the config file, each tag once; a bad name stops the start', () => {
    const config = serveConfig(
      parseServeArgs(['--dense-tag', 'a', '--dense-tag', 'b', '--dense-tag', 'a'], {}),
    );
    assert.deepEqual(config.denseTags, ['a', 'b']);
    assert.deepEqual(serveConfig(parseServeArgs([], {})).denseTags, []);
    assert.deepEqual(serveConfig(parseServeArgs([], { FROND_DENSE_TAG: 'x,y' })).denseTags, ['x', 'y']);
    const file = join(tempDir('frond-dense-config-'), 'frond.json');
    writeFileSync(file, JSON.stringify({ 'dense-tag': ['p', 'q'], 'hand-back-timeout-ms': 7 }));
    const fromFile = serveConfig(parseServeArgs(['--config', file], {}));
    assert.deepEqual([fromFile.denseTags, fromFile.handBackTimeoutMs], [['p', 'q'], 7]);
    assert.equal(serveConfig(parseServeArgs([], {})).handBackTimeoutMs, 5_000);
    assert.equal(serveConfig(parseServeArgs(['--hand-back-timeout-ms', '250'], {})).handBackTimeoutMs, 250);
    assert.throws(
      () => serveConfig(parseServeArgs(['--dense-tag', 'a\u0001'], {})),
      (error) => isFrondError(error, 'INVALID_ARGUMENT') && /--dense-tag/.test(error.message),
    );
    assert.throws(
      () => serveConfig(parseServeArgs(['--dense-tag', 'a', '--no-segment'], {})),
      (error) => isFrondError(error, 'INVALID_ARGUMENT') && /--no-segment/.test(error.message),
    );
  });

  it('a dense tag loads no segment ahead; a plain one does; a name without a row is warned of at start', async () => {
    const dense = randomTag('dense');
    const plain = randomTag('plain');
    const missing = randomTag('missing');
    const dataDir = tempDir('frond-dense-');
    assert.equal((await runFrond(['db', 'init', '--data-dir', dataDir])).code, 0);
    for (const tag of [dense, plain])
      assert.equal((await runFrond(['tag', 'add', tag, '--step', '100', '--data-dir', dataDir])).code, 0);
    const node = await startFrond([
      '--port',
      '0',
      '--no-snowflake',
      '--data-dir',
      dataDir,
      '--dense-tag',
      dense,
      '--dense-tag',
      missing,
    ]);
    try {
      for (const tag of [dense, plain])
        for (let i = 0; i < 30; i++) {
          const answer = await fetch(`${node.url}/api/segment/get/${tag}`, {
            signal: AbortSignal.timeout(5_000),
          });
          assert.equal(answer.status, 200);
        }
      // The look-ahead of the plain tag loads in the background after 10 % of its segment.
      let stats: { tags: { tag: string; next?: unknown; loads: number }[] } = { tags: [] };
      for (let i = 0; i < 100; i++) {
        const answer = await fetch(`${node.url}/v1/stats?tag=${dense}&tag=${plain}`);
        stats = (await answer.json()) as typeof stats;
        if (stats.tags.find((t) => t.tag === plain)?.next !== undefined) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const byTag = new Map(stats.tags.map((t) => [t.tag, t]));
      assert.notEqual(byTag.get(plain)?.next, undefined, JSON.stringify(stats.tags));
      assert.equal(byTag.get(dense)?.next, undefined, JSON.stringify(stats.tags));
      assert.equal(byTag.get(dense)?.loads, 1);
      const warned = node.logs.some((line) => line.includes('config.warning') && line.includes(missing));
      assert.ok(warned, node.logs.join('\n'));
      assert.ok(!node.logs.some((line) => line.includes('config.warning') && line.includes(dense)));
    } finally {
      assert.equal(await node.stop('SIGTERM'), 0);
    }
  });
});
