import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { decomposeSnowflake } from '../src/core/snowflake-layout.js';
import { type FrondProcess, runFrond, startFrond, tempDir } from './support/frond-process.js';
import { httpGet } from './support/http-get.js';

async function text(url: string): Promise<string> {
  const response = await fetch(url);
  const body = await response.text();
  if (response.status !== 200) throw new Error(`${url}: ${response.status} ${body}`);
  return body;
}

/** Eight clients at once, each mixing Leaf and batch requests of both modes, for `ms`. */
async function load(node: FrondProcess, tag: string, ms: number) {
  const segment: number[] = [];
  const snowflake: bigint[] = [];
  const until = Date.now() + ms;
  const client = async (n: number) => {
    for (let i = n; Date.now() < until; i++) {
      switch (i % 4) {
        case 0:
          segment.push(Number(await text(`${node.url}/api/segment/get/${tag}`)));
          break;
        case 1:
          snowflake.push(BigInt(await text(`${node.url}/api/snowflake/get/k`)));
          break;
        case 2: {
          const body = JSON.parse(await text(`${node.url}/v1/segment/${tag}?count=50`)) as { ids: string[] };
          segment.push(...body.ids.map(Number));
          break;
        }
        default: {
          const body = JSON.parse(await text(`${node.url}/v1/snowflake?count=50`)) as { ids: string[] };
          snowflake.push(...body.ids.map(BigInt));
        }
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, (_, n) => client(n)));
  return { segment, snowflake };
}

/** The primary's `listening` line: it comes once every worker listens. */
function listeningOf(node: FrondProcess) {
  return JSON.parse(node.logs.find((line) => line.includes('"event":"listening"')) as string) as {
    workers: number;
    workerPids: number[];
    snowflakeWorkerIds: number[];
  };
}

describe('frond serve --workers', () => {
  it('runs two workers on one port and store: no segment or snowflake ID twice under concurrent load', async () => {
    const dataDir = tempDir();
    assert.equal((await runFrond(['db', 'init', '--data-dir', dataDir])).code, 0);
    const added = await runFrond(['tag', 'add', 'orders', '--step', '100', '--data-dir', dataDir]);
    assert.equal(added.code, 0, added.stderr);
    const node = await startFrond(['--port', '0', '--data-dir', dataDir, '--workers', '2']);
    try {
      const listening = listeningOf(node);
      assert.equal(listening.workers, 2);
      assert.equal(new Set(listening.snowflakeWorkerIds).size, 2);
      assert.equal(new Set(listening.workerPids).size, 2);

      const { segment, snowflake } = await load(node, 'orders', 1500);
      assert.ok(segment.length > 500, `only ${segment.length} segment IDs`);
      assert.ok(snowflake.length > 500, `only ${snowflake.length} snowflake IDs`);
      assert.equal(new Set(segment).size, segment.length, 'a segment ID was handed out twice');
      assert.equal(new Set(snowflake).size, snowflake.length, 'a snowflake ID was handed out twice');
      // Both workers answered: the IDs carry both worker IDs, and each worker loaded its own segments.
      const workerIds = new Set(snowflake.map((id) => decomposeSnowflake(id).workerId));
      assert.deepEqual([...workerIds].sort(), [...listening.snowflakeWorkerIds].sort());
      const loadedBy = new Set(
        node.logs
          .filter((line) => line.includes('"segment.loaded"'))
          .map((line) => (JSON.parse(line) as { worker: number }).worker),
      );
      assert.deepEqual([...loadedBy].sort(), [0, 1]);
    } finally {
      const code = await node.stop('SIGTERM');
      assert.equal(code, 0, [...node.logs, ...node.stderr].join('\n'));
    }
    // Each worker kept its own lock and worker file under the node's data dir; all locks are released.
    for (const dir of [dataDir, join(dataDir, 'worker-0'), join(dataDir, 'worker-1')]) {
      assert.equal(existsSync(join(dir, 'frond.pid')), false, `${dir}/frond.pid left behind`);
    }
    const files = [0, 1].map(
      (i) =>
        JSON.parse(readFileSync(join(dataDir, `worker-${i}`, 'snowflake-worker.json'), 'utf8')) as {
          workerId: number;
        },
    );
    assert.notEqual(files[0]?.workerId, files[1]?.workerId);
    assert.ok(node.logs.some((line) => line.includes('"event":"stopped"')));
  });

  it('gives worker i the ID --worker-id + i (FROND_WORKERS), and keeps serving when a worker dies', async () => {
    const dataDir = tempDir();
    const node = await startFrond(
      ['--port', '0', '--data-dir', dataDir, '--worker-id', '40', '--no-segment'],
      {
        env: { FROND_WORKERS: '3' },
      },
    );
    let killed = false;
    try {
      const seen = new Set<number>();
      const ids = await Promise.all(
        Array.from({ length: 30 }, () => text(`${node.url}/api/snowflake/get/k`).then(BigInt)),
      );
      for (const id of ids) seen.add(decomposeSnowflake(id).workerId);
      assert.ok(
        [...seen].every((id) => id >= 40 && id <= 42),
        `worker IDs ${[...seen]}`,
      );

      const [victim] = listeningOf(node).workerPids;
      process.kill(victim as number, 'SIGKILL');
      killed = true;
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.ok(
        node.logs.some((line) => line.includes('"worker.exited"') && line.includes(`"pid":${victim}`)),
      );
      // The primary restarts nothing; the two others answer.
      for (let i = 0; i < 10; i++) assert.match(await text(`${node.url}/api/snowflake/get/k`), /^\d+$/);
    } finally {
      // A worker died on the way: the node ends with 1 once the others stopped gracefully.
      assert.equal(await node.stop('SIGTERM'), killed ? 1 : 0);
    }
  });

  it('answers /metrics and /v1/stats for the whole node, whichever process takes the request (issue 16, item 6)', async () => {
    const dataDir = tempDir();
    assert.equal((await runFrond(['db', 'init', '--data-dir', dataDir])).code, 0);
    const added = await runFrond(['tag', 'add', 'orders', '--step', '100', '--data-dir', dataDir]);
    assert.equal(added.code, 0, added.stderr);
    const node = await startFrond([
      '--port',
      '0',
      '--data-dir',
      dataDir,
      '--worker-id',
      '40',
      '--workers',
      '2',
    ]);
    // A new connection per request: the primary hands connections to the workers in turn.
    const fresh = new Agent({ keepAlive: false });
    try {
      let asked = 0;
      for (let i = 0; i < 40; i++) {
        assert.equal((await httpGet(`${node.url}/api/snowflake/get/k`, { agent: fresh })).status, 200);
        assert.equal((await httpGet(`${node.url}/api/segment/get/orders`, { agent: fresh })).status, 200);
        asked++;
      }
      let lastIssued = 0;
      for (let i = 0; i < 6; i++) {
        const metrics = (await httpGet(`${node.url}/metrics`, { agent: fresh })).body;
        assert.match(metrics, /^frond_snowflake_worker_id\{worker="0"\} 40$/m);
        assert.match(metrics, /^frond_snowflake_worker_id\{worker="1"\} 41$/m);
        const issued = [
          ...metrics.matchAll(/^frond_ids_issued_total\{mode="snowflake",worker_id="4[01]"\} (\d+)$/gm),
        ];
        assert.equal(issued.length, 2, metrics);
        const total = issued.reduce((sum, match) => sum + Number(match[1]), 0);
        assert.ok(total >= asked, `${total} snowflake IDs counted, ${asked} asked`);
        const segment = /^frond_ids_issued_total\{mode="segment",tag="orders"\} (\d+)$/m.exec(metrics);
        assert.ok(Number(segment?.[1]) >= asked, metrics);
        const stats = JSON.parse((await httpGet(`${node.url}/v1/stats`, { agent: fresh })).body) as {
          processes: number;
          snowflake: { workerIds: number[]; issued: number };
          tags: { tag: string; issued: number }[];
        };
        assert.equal(stats.processes, 2);
        assert.deepEqual([...stats.snowflake.workerIds].sort(), [40, 41]);
        assert.ok(stats.snowflake.issued >= lastIssued, 'the stats went back: they flap between processes');
        assert.ok(stats.snowflake.issued >= asked);
        assert.ok((stats.tags.find((tag) => tag.tag === 'orders')?.issued ?? 0) >= asked);
        lastIssued = stats.snowflake.issued;
      }
    } finally {
      fresh.destroy();
      assert.equal(await node.stop('SIGTERM'), 0, [...node.logs, ...node.stderr].join('\n'));
    }
  });

  it('refuses worker IDs past 1023 with one line and exit code 2', async () => {
    const result = await runFrond([
      'serve',
      '--port',
      '0',
      '--data-dir',
      tempDir(),
      '--workers',
      '2',
      '--worker-id',
      '1023',
    ]);
    assert.equal(result.code, 2);
    assert.match(
      result.stderr,
      /^frond: --worker-id 1023 with --workers 2 gives worker IDs up to 1024, above 1023/,
    );
    assert.equal(result.stderr.trim().split('\n').length, 1);
  });
});
