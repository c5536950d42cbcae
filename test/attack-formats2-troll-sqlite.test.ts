import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { LIBFAKETIME, offsetClock } from './support/fake-clock.js';
import { runFrond, startFrond, tempDir } from './support/frond-process.js';
import { httpGet } from './support/http-get.js';
import { randomTag } from './support/random-tag.js';
import { serviceMissing } from './support/service-gate.js';
import { copy } from './support/sqlite-by-hand.js';

// Real processes on SQLite, whose fenced_at is the fencing process's clock (CURRENT_TIMESTAMP),
// every clock exact. Antarctica/Troll goes from +02 back to +00 on 2026-10-25 at 01:00 UTC: the
// local 01 hour happens at 23:00 UTC and again at 01:00 UTC, one counter. The file is restored to a
// copy taken before the first 01 hour served and fenced at 23:40 UTC; in the second 01 hour the
// counter was created again from 1 (its stretch began over an hour after the fence) and served the
// first hour's numbers again.
describe('attack-formats2: SQLite restored and fenced between the two 01 hours of Antarctica/Troll', () => {
  it('serves no number twice', async (t) => {
    if (!existsSync(LIBFAKETIME)) return serviceMissing(t, 'libfaketime', `${LIBFAKETIME} is missing`);
    const clock = offsetClock('@2026-10-24 20:00:00');
    const env = clock.env;
    const dataDir = tempDir();
    const file = join(dataDir, 'frond.db');
    const tag = randomTag('troll');
    assert.equal((await runFrond(['db', 'init', '--data-dir', dataDir], { env })).code, 0);
    const added = await runFrond(
      [
        'tag',
        'add',
        tag,
        '--step',
        '5',
        '--format',
        'T{yyyy}{MM}{dd}{HH}-{seq:6}',
        '--time-zone',
        'Antarctica/Troll',
        '--data-dir',
        dataDir,
      ],
      { env },
    );
    assert.equal(added.code, 0, added.stderr);
    const backup = join(tempDir(), 'backup.db');
    await copy(file, backup);

    const take = async (at: string): Promise<string[]> => {
      clock.set(at);
      // Each node a data dir of its own (a node replaced, or another machine on the file's copy).
      const node = await startFrond(
        ['--port', '0', '--store', `sqlite:${file}`, '--data-dir', tempDir(), '--no-snowflake'],
        { env },
      );
      try {
        const ids: string[] = [];
        for (let i = 0; i < 3; i++) {
          const answer = await httpGet(`${node.url}/api/segment/get/${tag}`);
          assert.equal(answer.status, 200, answer.body);
          ids.push(answer.body.trim());
        }
        return ids;
      } finally {
        await node.stop();
      }
    };
    const before = await take('@2026-10-24 23:10:00');
    assert.deepEqual(before, ['T2026102501-000001', 'T2026102501-000002', 'T2026102501-000003']);

    await copy(backup, file);
    clock.set('@2026-10-24 23:40:00');
    const fenced = await runFrond(['db', 'fence', '--yes', '--data-dir', dataDir, '--fence-skip', '1000'], {
      env,
    });
    assert.equal(fenced.code, 0, fenced.stderr);

    const after = await take('@2026-10-25 01:10:00');
    assert.ok(
      after.every((id) => id.startsWith('T2026102501-')),
      after.join(', '),
    );
    const repeated = after.filter((id) => before.includes(id));
    assert.deepEqual(
      repeated,
      [],
      `served twice: ${repeated.join(', ')} (after the fence: ${after.join(', ')})`,
    );
  });
});
