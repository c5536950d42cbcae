// Attack: a `frond serve --workers 3` node whose primary is SIGKILLed while its processes are
// retiring (SIGTERM, then SIGKILL 20 or 120 ms later), twice under load, on PostgreSQL and
// SQLite. Each time its worker processes must end (no orphan serving on, or holding the data
// dir), the next start must not fence, and at the end every ID of the tag from 1 to max_id is
// answered once or in the gap report (crash gaps for what the killed stop could not hand back).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { backendSkip } from './support/backend-filter.js';
import { runFrond } from './support/frond-process.js';
import { BACKEND_NAME, backends, type HandBackDialect } from './support/hand-back-backend.js';
import { account, Load, listGaps, Node, reasonFigure } from './support/hand-back-nodes.js';
import { randomTag } from './support/random-tag.js';

/** The PIDs of `pid`'s children now (the primary's worker processes). */
function childrenOf(pid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .map((line) => Number(line.trim()))
      .filter((n) => n > 0);
  } catch {
    return [];
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

for (const dialect of ['postgres', 'sqlite'] as HandBackDialect[]) {
  const name = BACKEND_NAME[dialect];
  const stores = backends(dialect);
  after(() => stores.dropAll());
  describe(`attack: --workers 3, the primary SIGKILLed mid-stop (${name})`, {
    skip: backendSkip(name),
  }, () => {
    it('workers end, no fence, every ID once or in a gap', { timeout: 60_000 }, async (t) => {
      const backend = await stores.open(t);
      if (backend === undefined) return;
      const tag = randomTag('wk');
      const added = await runFrond([
        'tag',
        'add',
        tag,
        '--step',
        '50',
        '--start',
        '1',
        '--store',
        backend.store,
      ]);
      assert.equal(added.code, 0, added.stderr);
      const node = await Node.create('node', backend.store, ['--workers', '3', '--max-step', '400']);
      const load = new Load(tag);
      const orphans: number[] = [];
      try {
        await node.start();
        load.add(node, 4);
        for (const delayMs of [20, 120]) {
          await sleep(300);
          const primary = node.process?.child.pid as number;
          const workers = childrenOf(primary);
          assert.ok(workers.length >= 3, `the primary has its worker processes (${workers.length})`);
          node.process?.child.kill('SIGTERM');
          await sleep(delayMs);
          await node.stop('SIGKILL');
          // The workers see their primary gone: bounded, 10 s.
          for (let i = 0; i < 100 && workers.some(alive); i++) await sleep(100);
          const left = workers.filter(alive);
          orphans.push(...left);
          for (const pid of left) process.kill(pid, 'SIGKILL');
          await node.start();
        }
        await sleep(300);
        await load.stop();
        assert.equal(await node.stop('SIGTERM'), 0);
      } finally {
        await load.stop();
        await node.stop('SIGKILL');
      }
      assert.deepEqual(orphans, [], 'no worker process outlives its primary by 10 s');
      const fenced = node
        .logs()
        .filter(
          (line) =>
            line.includes('"event":"segment.fenced"') ||
            (line.includes('"event":"segment.fence_needed"') && !line.includes('first use of this database')),
        );
      assert.deepEqual(fenced.slice(0, 3), [], 'no fence');
      const auditor = await Node.create('auditor', backend.store);
      await auditor.start();
      let gaps: Awaited<ReturnType<typeof listGaps>>;
      try {
        gaps = await listGaps(auditor.url, tag);
      } finally {
        await auditor.stop('SIGTERM');
      }
      const [row] = await backend.sql('SELECT max_id FROM leaf_alloc WHERE biz_tag = ?', [tag]);
      const maxId = Number(row?.max_id);
      const result = account(load.ids, gaps, 1, maxId);
      t.diagnostic(
        `${name}: ${result.answered} IDs, max_id ${maxId}, gaps ${reasonFigure(gaps)}; duplicates ${result.duplicates}, unaccounted ${result.unaccounted} ${result.unaccountedRuns.join(' ')}, answered in a non-crash gap ${result.answeredInGap}`,
      );
      assert.equal(result.duplicates, 0, 'no ID twice');
      assert.equal(result.aboveMaxId, 0, 'no ID at or above max_id');
      assert.equal(
        result.unaccounted,
        0,
        `every ID answered or in a gap: ${result.unaccountedRuns.join(' ')}`,
      );
      assert.equal(result.answeredInGap, 0, 'no answered ID in a gap other than crash');
    });
  });
}
