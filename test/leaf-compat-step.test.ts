import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it, type TestContext } from 'node:test';
import { backendSkip } from './support/backend-filter.js';
import { type FrondProcess, runFrond, startFrond, tempDir } from './support/frond-process.js';
import { randomTag } from './support/random-tag.js';
import { byHand } from './support/sqlite-by-hand.js';
import { testDatabase } from './support/test-database.js';

// A step changed in leaf_alloc by hand while a node serves, on each real store, against Leaf's
// SegmentIDGenImpl.updateSegmentFromDb (leaf-core/src/main/java/com/sankuai/inf/leaf/segment/
// SegmentIDGenImpl.java in Meituan-Dianping/Leaf at 86a6441):
// - loads 1 and 2 take the row's step (lines 162-170: `updateMaxIdAndGetLeafAlloc`, then
//   `setStep(leafAlloc.getStep())`); the second sets the update timestamp;
// - each later load doubles the buffer's own step while segments last under 15 minutes (lines
//   173-179: `nextStep = buffer.getStep()`, `nextStep * 2` while it is at most MAX_STEP), asks the
//   row for that many (`updateMaxIdByCustomStepAndGetLeafAlloc`, line 189), keeps it as its step
//   (`setStep(nextStep)`, line 191) and takes only its floor from the row (`setMinStep(leafAlloc
//   .getStep())`, line 192).
// So a row of step 10 set to 5 once the node reached 40 goes on 80, 160, 320: Leaf's segments.

const postgres = testDatabase('postgres');
const mysql = testDatabase('mysql');
after(() => Promise.all([postgres.drop(), mysql.drop()]));

interface Backend {
  name: string;
  /** The `--store` value with an empty store made, and how to set a row's step by hand. */
  open(
    t: TestContext,
  ): Promise<{ store: string; setStep(tag: string, step: number): Promise<void> } | undefined>;
}

const BACKENDS: Backend[] = [
  {
    name: 'SQLite',
    async open() {
      const file = join(tempDir(), 'frond.db');
      assert.equal((await runFrond(['db', 'init', '--store', `sqlite:${file}`])).code, 0);
      return {
        store: `sqlite:${file}`,
        setStep: async (tag, step) => {
          byHand(file, (db) => db.prepare('UPDATE leaf_alloc SET step = ? WHERE biz_tag = ?').run(step, tag));
        },
      };
    },
  },
  ...(['postgres', 'mysql'] as const).map(
    (dialect): Backend => ({
      name: dialect === 'postgres' ? 'PostgreSQL' : 'MariaDB',
      async open(t) {
        const db = await (dialect === 'postgres' ? postgres : mysql).open(t);
        if (db === undefined) return undefined;
        const mark = (n: number) => (dialect === 'postgres' ? `$${n}` : '?');
        return {
          store: db.url,
          setStep: async (tag, step) => {
            await db.sql(`UPDATE leaf_alloc SET step = ${mark(1)} WHERE biz_tag = ${mark(2)}`, [step, tag]);
          },
        };
      },
    }),
  ),
];

/** The steps of the node's segment loads of `tag` so far, in order (its `segment.loaded` lines). */
function loadedSteps(node: FrondProcess, tag: string): number[] {
  return node.logs
    .map((line) => JSON.parse(line) as { event?: string; tag?: string; step?: number })
    .filter((line) => line.event === 'segment.loaded' && line.tag === tag)
    .map((line) => line.step as number);
}

/** One ID at a time on Leaf's path until the node has made `loads` loads of `tag`; the IDs. */
async function takeUntil(node: FrondProcess, tag: string, loads: number): Promise<bigint[]> {
  const ids: bigint[] = [];
  for (let i = 0; loadedSteps(node, tag).length < loads; i++) {
    assert.ok(i < 2_000, `only ${loadedSteps(node, tag).length} loads after ${i} IDs`);
    const response = await fetch(`${node.url}/api/segment/get/${tag}`);
    const body = await response.text();
    assert.equal(response.status, 200, body);
    ids.push(BigInt(body));
  }
  return ids;
}

for (const backend of BACKENDS) {
  describe(`${backend.name}: a step changed in leaf_alloc by hand`, {
    skip: backendSkip(backend.name),
  }, () => {
    it("moves a running node's floor, not its dynamic step: 10, 10, 20, 40, then 80, 160, 320 after step=5", async (t) => {
      const opened = await backend.open(t);
      if (opened === undefined) return;
      const tag = randomTag('step');
      const added = await runFrond([
        'tag',
        'add',
        tag,
        '--step',
        '10',
        '--start',
        '1',
        '--store',
        opened.store,
      ]);
      assert.equal(added.code, 0, added.stderr);
      const node = await startFrond([
        '--port',
        '0',
        '--data-dir',
        tempDir(),
        '--no-snowflake',
        '--store',
        opened.store,
      ]);
      try {
        // Load 4 (40, the preload of the third segment) is in once 2 IDs of segment 3 (20) are used;
        // load 5 starts 22 IDs later, after segment 4 became current: the row is changed before it.
        const before = await takeUntil(node, tag, 4);
        assert.deepEqual(loadedSteps(node, tag), [10, 10, 20, 40]);
        await opened.setStep(tag, 5);
        const afterwards = await takeUntil(node, tag, 7);
        // Leaf: 80, 160, 320 (lines 173-179 and 191). Before, the node restarted from the row's 5
        // once it read it: 80, then 10, 20.
        assert.deepEqual(loadedSteps(node, tag), [10, 10, 20, 40, 80, 160, 320]);
        const ids = [...before, ...afterwards];
        assert.deepEqual(
          ids,
          ids.map((_, i) => BigInt(i + 1)),
          'one node serves 1, 2, 3, … without a gap',
        );
      } finally {
        await node.stop();
      }
    });
  });
}
