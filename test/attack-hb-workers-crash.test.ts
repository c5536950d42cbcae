// Attack on the gap figures of a --workers node after a SIGKILL (SQLite, real processes): the
// restarted node's /metrics and /v1/stats must agree with frond_gaps and with its own
// `segment.crash_gaps` log lines, and no ID it serves may be inside a listed gap.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { runFrond, startFrond, tempDir } from './support/frond-process.js';
import { randomTag } from './support/random-tag.js';

async function call(url: string): Promise<{ status: number; body: string }> {
  const response = await fetch(url, { signal: AbortSignal.timeout(8_000), headers: { connection: 'close' } });
  return { status: response.status, body: await response.text() };
}

describe('attack: --workers 2, SIGKILL, restart', () => {
  it('the crash figures in /metrics and /v1/stats match frond_gaps and the logs; no served ID listed', async () => {
    const tag = randomTag('ahb');
    const dataDir = tempDir('frond-attack-workers-');
    assert.equal((await runFrond(['db', 'init', '--data-dir', dataDir])).code, 0);
    const added = await runFrond(['tag', 'add', tag, '--step', '100', '--start', '1', '--data-dir', dataDir]);
    assert.equal(added.code, 0, added.stderr);
    const args = ['--port', '0', '--no-snowflake', '--data-dir', dataDir, '--workers', '2'];
    const node = await startFrond(args);
    const served: bigint[] = [];
    for (let i = 0; i < 60; i++) {
      const answer = await call(`${node.url}/api/segment/get/${tag}`);
      assert.equal(answer.status, 200, answer.body);
      served.push(BigInt(answer.body));
    }
    // The workers first, then the primary, each by its PID: all die without a stop, as an OOM kill would.
    // The workers, as the primary's children: waited for (bounded), a loaded machine forks late.
    const workers = () =>
      execFileSync('ps', ['-o', 'pid=', '--ppid', String(node.child.pid)], { encoding: 'utf8' })
        .split('\n')
        .map((text) => Number(text.trim()))
        .filter((pid) => pid > 0);
    let children = workers();
    for (let round = 0; round < 100 && children.length < 2; round++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      children = workers();
    }
    assert.equal(children.length, 2, `workers of ${node.child.pid}: ${children.join(' ')}`);
    for (const pid of children) process.kill(pid, 'SIGKILL');
    node.child.kill('SIGKILL');
    await node.exited;
    // A worker the primary forked again between the kills (it replaces a worker that dies) is an
    // orphan then: it finds its primary gone and stops on its own, handing back, and holds its
    // data dir until it has. A restart meanwhile is refused in one line ("in use by process N"),
    // as a supervisor would see it: tried again every 500 ms (bounded: 20 times).
    let again: Awaited<ReturnType<typeof startFrond>> | undefined;
    for (let attempt = 1; again === undefined; attempt++) {
      try {
        again = await startFrond(args);
      } catch (error) {
        if (attempt >= 20 || !/is in use by process/.test(String(error))) throw error;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
    try {
      const after: bigint[] = [];
      for (let i = 0; i < 60; i++) {
        const answer = await call(`${again.url}/api/segment/get/${tag}`);
        assert.equal(answer.status, 200, answer.body);
        after.push(BigInt(answer.body));
      }
      assert.equal(new Set([...served, ...after]).size, 120, 'an ID served twice');
      const gaps = await runFrond(['tag', 'gaps', tag, '--json', '--data-dir', dataDir]);
      const listed = (JSON.parse(gaps.stdout) as { gaps: { start: string; end: string; reason: string }[] })
        .gaps;
      const crashIds = listed
        .filter((gap) => gap.reason === 'crash')
        .reduce((sum, gap) => sum + BigInt(gap.end) - BigInt(gap.start), 0n);
      const logged = again.logs
        .filter((line) => line.includes('"segment.crash_gaps"'))
        .reduce((sum, line) => sum + BigInt((JSON.parse(line) as { ids: string }).ids), 0n);
      assert.ok(crashIds > 0n, `no crash gap listed: ${gaps.stdout}`);
      assert.equal(logged, crashIds, `logged ${logged}, listed ${crashIds}: ${gaps.stdout}`);
      const listedAndServed = after.filter((n) =>
        listed.some((gap) => BigInt(gap.start) <= n && n < BigInt(gap.end)),
      );
      assert.deepEqual(listedAndServed.map(String), []);
      // The totals are read at most every 10 s: wait for a fresh read (bounded).
      let metrics = '';
      for (let round = 0; round < 30; round++) {
        metrics = (await call(`${again.url}/metrics`)).body;
        if (new RegExp(`^frond_gap_ids\\{reason="crash"\\} ${crashIds}$`, 'm').test(metrics)) break;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      assert.match(metrics, new RegExp(`^frond_gap_ids\\{reason="crash"\\} ${crashIds}$`, 'm'));
      assert.match(metrics, new RegExp(`^frond_ids_given_up_total\\{reason="crash"\\} ${crashIds}$`, 'm'));
      const stats = JSON.parse((await call(`${again.url}/v1/stats`)).body) as {
        gaps: Record<string, { ids: string }>;
        givenUp: Record<string, string>;
      };
      assert.equal(stats.gaps.crash?.ids, String(crashIds), JSON.stringify(stats.gaps));
      assert.equal(stats.givenUp.crash, String(crashIds), JSON.stringify(stats.givenUp));
    } finally {
      await again.stop('SIGTERM', 20_000);
    }
  });
});
