import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { decomposeSnowflake } from '../src/core/snowflake-layout.js';
import { ZOOKEEPER_CACHE_FILE } from '../src/worker-ids/zookeeper/leaf-worker-id-source.js';
import { leafModeArgs, randomName, ZOOKEEPER, zookeeperUp } from './support/coordinators.js';
import { fakeClock } from './support/fake-clock.js';
import { type FrondProcess, runFrond, startFrond, tempDir } from './support/frond-process.js';
import { assertUnique, maxOf, minOf, takeIds, traffic, workerIdOf } from './support/snowflake-traffic.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('clocks set back at start (libfaketime, ZooKeeper Leaf layout)', () => {
  it('waits past every ID issued before a SIGKILL when restarted 6 s back, and refuses to start 1 h back', async (t) => {
    if (!(await zookeeperUp(t))) return;
    // 6 s back with a start-up wait of 20 s: the restart is behind the recorded time even when it
    // takes seconds on a busy machine (with both cores loaded, 2 s back was already past it).
    const back6s = fakeClock(t, '-6s')?.env;
    const back1h = fakeClock(t, '-1h')?.env;
    if (back6s === undefined || back1h === undefined) return;
    const name = randomName();
    const dataDir = tempDir();
    const nodes: FrondProcess[] = [];
    t.after(() => Promise.all(nodes.map((node) => node.stop('SIGKILL'))));

    const first = await startFrond(leafModeArgs(ZOOKEEPER, name, 7400, dataDir));
    nodes.push(first);
    const load = traffic(first);
    await sleep(500);
    await first.stop('SIGKILL');
    await load.stop();
    const before = load.ids;
    const lastBefore = Math.max(...before.map((id) => decomposeSnowflake(id).timestamp));

    // 6 s back, right after the crash: behind the time recorded ahead of every ID (up to 2 s past
    // the last one), which the start waits out; then every ID is above every earlier one.
    const startedAt = Date.now();
    const second = await startFrond(
      leafModeArgs(ZOOKEEPER, name, 7400, dataDir, ['--clock-startup-wait-ms', '20000']),
      { env: back6s },
    );
    nodes.push(second);
    const startMs = Date.now() - startedAt;
    assert.equal(workerIdOf(second), workerIdOf(first));
    const waited = second.logs.find((line) => line.includes('snowflake.clock_behind_at_start'));
    assert.ok(waited, 'the start waited for the clock');
    const behindMs = (JSON.parse(waited) as { behindMs: number }).behindMs;
    const after = await takeIds(second, 200);
    assert.ok(minOf(after) > maxOf(before), 'no ID at or below one handed out before');
    assert.ok(decomposeSnowflake(minOf(after)).timestamp > lastBefore);
    assertUnique([...before, ...after]);
    assert.equal(await second.stop('SIGTERM'), 0);

    // 1 h back: far beyond --clock-startup-wait-ms (5 s): refused, one line, exit code 1.
    const refused = await runFrond(['serve', ...leafModeArgs(ZOOKEEPER, name, 7400, dataDir)], {
      env: back1h,
    });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /^frond: the clock is \d+ ms behind .*fix the clock or start later\n$/);

    // Without the cache file, the time the identity last reported into ZooKeeper still refuses it.
    rmSync(join(dataDir, ZOOKEEPER_CACHE_FILE));
    const noCache = await runFrond(['serve', ...leafModeArgs(ZOOKEEPER, name, 7400, dataDir)], {
      env: back1h,
    });
    assert.equal(noCache.code, 1);
    assert.match(noCache.stderr, /^frond: the clock is \d+ ms behind/);
    t.diagnostic(
      `restart 6 s back after SIGKILL: ${before.length} IDs before, the start waited ${behindMs} ms (ready in ${startMs} ms), first ID above all; 1 h back: refused (${refused.stderr.trim()})`,
    );
  });

  it('refuses a node whose clock is further from the live nodes than --clock-max-skew-ms, and measures the skew of one within it', async (t) => {
    if (!(await zookeeperUp(t))) return;
    const back10s = fakeClock(t, '-10s')?.env;
    const back6s = fakeClock(t, '-2s')?.env;
    if (back10s === undefined || back6s === undefined) return;
    const name = randomName();
    const live = await startFrond(leafModeArgs(ZOOKEEPER, name, 7500, tempDir()));
    t.after(() => live.stop('SIGKILL'));

    const refused = await runFrond(['serve', ...leafModeArgs(ZOOKEEPER, name, 7501, tempDir())], {
      env: back10s,
    });
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr,
      /^frond: the clock is \d+ ms behind the median of 1 live node\(s\) .*--clock-max-skew-ms 5000.*\n$/,
    );
    const skewRefused = Number(/the clock is (\d+) ms/.exec(refused.stderr)?.[1]);
    assert.ok(Math.abs(skewRefused - 10_000) < 1000, `measured ${skewRefused} ms for a 10 s offset`);

    const within = await startFrond(leafModeArgs(ZOOKEEPER, name, 7502, tempDir()), { env: back6s });
    t.after(() => within.stop('SIGKILL'));
    const compared = within.logs.find((line) => line.includes('worker.clock_compared'));
    assert.ok(compared);
    const { skewMs } = JSON.parse(compared) as { skewMs: number };
    assert.ok(Math.abs(skewMs + 2000) < 500, `measured ${skewMs} ms for a -2 s offset`);
    assert.notEqual(workerIdOf(within), workerIdOf(live));
    assertUnique([...(await takeIds(live, 200)), ...(await takeIds(within, 200))]);
    t.diagnostic(
      `clock compared with live nodes: -10 s measured as ${skewRefused} ms (refused), -2 s as ${skewMs} ms`,
    );
  });
});
