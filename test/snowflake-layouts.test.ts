// Snowflake layouts and StatefulSet ordinals, on real `frond serve` processes: a layout other than
// Leaf's (39 bits of 10 ms units, 16 of worker ID, 8 of sequence) served and decoded the same way by
// `frond decode`, the SDK, `/v1/snowflake/decode` and Leaf's `/decodeSnowflakeId`; layouts that
// cannot work refused in one line; the time bits' warning with an epoch that leaves under three
// years; and worker IDs from a pod's hostname.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createClient, decodeSnowflake } from '../packages/client/src/index.js';
import { layoutOf } from '../src/core/snowflake-layout.js';
import {
  assertOneLineError,
  type FrondProcess,
  runFrond,
  startFrond,
  tempDir,
} from './support/frond-process.js';

const DAY = 86_400_000;
const SONY = ['--snowflake-layout', '39+16+8', '--time-unit-ms', '10'];
const sony = layoutOf('39+16+8', 10, 1288834974657);

async function json<T>(url: string): Promise<T> {
  const response = await fetch(url);
  const body = await response.text();
  assert.equal(response.status, 200, `${url}: ${body}`);
  return JSON.parse(body) as T;
}

async function text(url: string): Promise<string> {
  const response = await fetch(url);
  const body = await response.text();
  assert.equal(response.status, 200, `${url}: ${body}`);
  return body;
}

interface Parts {
  id: string;
  timestamp: number;
  time: string;
  workerId: number;
  sequence: number;
}

/** The snowflake-only node a test needs, stopped by the caller. */
function serve(args: string[], env: NodeJS.ProcessEnv = {}, dataDir = tempDir()): Promise<FrondProcess> {
  return startFrond(['--port', '0', '--data-dir', dataDir, '--no-segment', ...args], { env });
}

describe('snowflake layouts on a real node', () => {
  it('serves 39+16+8 in 10 ms units, and frond decode, the SDK, /v1 and Leaf decode read its IDs alike', async () => {
    const dataDir = tempDir();
    const before = Date.now();
    const node = await serve([...SONY, '--worker-id', '40000'], {}, dataDir);
    const served: bigint[] = [];
    try {
      // A batch of 3,000 needs at least 12 units of 256: it spans them, in order.
      for (let round = 0; round < 3; round++) {
        const { ids } = await json<{ ids: string[] }>(`${node.url}/v1/snowflake?count=3000`);
        served.push(...ids.map(BigInt));
        for (let i = 0; i < 20; i++) served.push(BigInt(await text(`${node.url}/api/snowflake/get/k`)));
      }
      const after = Date.now();
      assert.equal(new Set(served).size, served.length, 'no ID twice');
      for (let i = 1; i < served.length; i++)
        assert.ok((served[i] as bigint) > (served[i - 1] as bigint), `ID ${i}`);
      const options = { snowflakeLayout: '39+16+8', timeUnitMs: 10 };
      const units = new Set<number>();
      for (const id of served) {
        const parts = decodeSnowflake(id, options);
        assert.equal(parts.workerId, 40_000);
        assert.ok(parts.sequence <= 255);
        assert.equal((parts.timestamp - 1288834974657) % 10, 0, 'a unit starts on a 10 ms boundary');
        assert.ok(parts.timestamp >= before - 10 && parts.timestamp <= after, `${parts.time.toISOString()}`);
        assert.deepEqual(sony.decompose(id), {
          timestamp: parts.timestamp,
          workerId: 40_000,
          sequence: parts.sequence,
        });
        units.add(parts.timestamp);
      }
      assert.ok(units.size >= 36, `${units.size} units for ${served.length} IDs of at most 256 a unit`);

      // A sample through every decoder: the same answer.
      const sample = [served[0], served[2_999], served[3_000], served.at(-1)] as bigint[];
      const client = createClient({ urls: [node.url], ...options });
      try {
        const fromClient = await client.snowflake();
        assert.equal(client.decodeSnowflake(fromClient).workerId, 40_000);
        sample.push(fromClient);
        for (const id of sample) {
          const sdk = client.decodeSnowflake(id);
          const v1 = await json<Parts>(`${node.url}/v1/snowflake/decode/${id}`);
          assert.deepEqual(v1, {
            id: id.toString(),
            timestamp: sdk.timestamp,
            time: sdk.time.toISOString(),
            workerId: sdk.workerId,
            sequence: sdk.sequence,
          });
          const leaf = await json<Record<string, string>>(`${node.url}/decodeSnowflakeId?snowflakeId=${id}`);
          assert.equal(leaf.workerId, String(sdk.workerId));
          assert.equal(leaf.sequenceId, String(sdk.sequence));
          assert.match(leaf.timestamp ?? '', new RegExp(`^${sdk.timestamp}\\(`));
        }
      } finally {
        client.close();
      }
      for (const id of [sample[0], sample.at(-1)] as bigint[]) {
        const decoded = await runFrond(['decode', id.toString(), ...SONY]);
        assert.equal(decoded.code, 0, decoded.stderr);
        assert.deepEqual(
          JSON.parse(decoded.stdout),
          await json<Parts>(`${node.url}/v1/snowflake/decode/${id}`),
        );
        // Without the layout, decode reads Leaf's bits: another answer, which is why it takes the flags.
        const leafBits = JSON.parse((await runFrond(['decode', id.toString()])).stdout) as Parts;
        assert.notEqual(leafBits.workerId, 40_000);
      }

      // What the node says of its layout.
      const health = await json<{ snowflake: { workerId: number; layout: string; timeUnitMs: number } }>(
        `${node.url}/healthz`,
      );
      assert.deepEqual(
        [health.snowflake.workerId, health.snowflake.layout, health.snowflake.timeUnitMs],
        [40_000, '39+16+8', 10],
      );
      const stats = await json<{ snowflake: { layout: Record<string, number | string> } }>(
        `${node.url}/v1/stats`,
      );
      assert.equal(stats.snowflake.layout.bits, '39+16+8');
      assert.equal(stats.snowflake.layout.maxWorkerId, 65_535);
      assert.equal(stats.snowflake.layout.endsAt, sony.endsAt);
      const metrics = await text(`${node.url}/metrics`);
      assert.match(
        metrics,
        /^frond_snowflake_layout_info\{bits="39\+16\+8",time_unit_ms="10",epoch="1288834974657"\} 1$/m,
      );
      const left = Number(/^frond_snowflake_time_left_seconds (\S+)$/m.exec(metrics)?.[1]);
      assert.ok(Math.abs(left - (sony.endsAt - Date.now()) / 1000) < 60, `${left}`);
      const ready = await json<{ ready: boolean; warnings: string[] }>(`${node.url}/readyz`);
      assert.deepEqual([ready.ready, ready.warnings], [true, []]);
    } finally {
      assert.equal(await node.stop(), 0);
    }

    // Restarted on its data dir: above every ID of the last run, in a later unit.
    const again = await serve([...SONY, '--worker-id', '40000'], {}, dataDir);
    try {
      const first = BigInt(await text(`${again.url}/api/snowflake/get/k`));
      assert.ok(first > (served.at(-1) as bigint));
      assert.ok(sony.decompose(first).timestamp > sony.decompose(served.at(-1) as bigint).timestamp);
    } finally {
      await again.stop();
    }
  });

  it("gives Leaf's IDs with the default layout: Leaf's shifts decode them", async () => {
    const node = await serve(['--worker-id', '513']);
    try {
      const id = BigInt(await text(`${node.url}/api/snowflake/get/k`));
      assert.equal(Number((id >> 12n) & 1023n), 513);
      const t = Number(id >> 22n) + 1288834974657;
      assert.ok(Math.abs(Date.now() - t) < 60_000);
      assert.deepEqual(decodeSnowflake(id), { ...decodeSnowflake(id, 1288834974657) });
      const leaf = await json<Record<string, string>>(`${node.url}/decodeSnowflakeId?snowflakeId=${id}`);
      assert.equal(leaf.workerId, '513');
      assert.equal(leaf.sequenceId, String(Number(id & 4095n)));
    } finally {
      await node.stop();
    }
  });

  it('refuses a layout that cannot work at start, with one line and exit code 2', async () => {
    const dataDir = tempDir();
    const cases: [string[], RegExp][] = [
      [
        ['--snowflake-layout', '40+10+12'],
        /^frond: --snowflake-layout 40\+10\+12 has 62 bits: time, worker and sequence bits must sum to 63/,
      ],
      [['--snowflake-layout', '41+22+0'], /^frond: --snowflake-layout 41\+22\+0 has no sequence bit/],
      [
        ['--snowflake-layout', '20+31+12'],
        /^frond: --snowflake-layout 20\+31\+12: worker bits must be 1 to 22/,
      ],
      [
        ['--snowflake-layout', '41,10,12'],
        /^frond: --snowflake-layout "41,10,12" is invalid: give TIME\+WORKER\+SEQUENCE/,
      ],
      [
        ['--snowflake-layout', '31+20+12'],
        /^frond: --snowflake-layout 31\+20\+12 in 1 ms units from --epoch 1288834974657 ran out on 2010-11-28T22:14:18\.305Z: a layout must last at least 365 days from now/,
      ],
      [
        ['--snowflake-layout', '53+5+5'],
        /^frond: --snowflake-layout 53\+5\+5 in 1 ms units runs past the year 275760/,
      ],
      [
        [...SONY, '--worker-id', '65536'],
        /^frond: --worker-id "65536" is invalid: use an integer from 0 to 65535 \(the 16 worker bits of --snowflake-layout 39\+16\+8\)$/,
      ],
      [['--worker-id', '1024'], /^frond: --worker-id "1024" is invalid: use an integer from 0 to 1023$/],
      [['--time-unit-ms', '0'], /^frond: --time-unit-ms "0" is invalid: use an integer from 1 to 1000$/],
      [
        ['--time-unit-ms', '10000'],
        /^frond: --time-unit-ms "10000" is invalid: use an integer from 1 to 1000$/,
      ],
    ];
    for (const [args, pattern] of cases)
      assertOneLineError(
        await runFrond(['serve', '--port', '0', '--data-dir', dataDir, ...args]),
        2,
        pattern,
      );
    // Through the environment as well, as a Kubernetes manifest would set it.
    assertOneLineError(
      await runFrond(['serve', '--port', '0', '--data-dir', dataDir], {
        env: { FROND_SNOWFLAKE_LAYOUT: '41+10+13' },
      }),
      2,
      /^frond: --snowflake-layout 41\+10\+13 has 64 bits/,
    );
    // `frond decode` takes any valid layout, one that ran out too, and refuses one that is not.
    assert.equal((await runFrond(['decode', '12345', '--snowflake-layout', '31+20+12'])).code, 0);
    assertOneLineError(
      await runFrond(['decode', '1', '--snowflake-layout', '40+10+12']),
      2,
      /^frond: --snowflake-layout 40\+10\+12 has 62 bits/,
    );
  });

  it('warns on /readyz (still ready), in /metrics and in the log when the time bits have under three years left', async () => {
    // 36 bits of ms last 795 days: an epoch 250 days back leaves 545.
    const epoch = Date.now() - 250 * DAY;
    const node = await serve([
      '--snowflake-layout',
      '36+15+12',
      '--epoch',
      String(epoch),
      '--worker-id',
      '9',
    ]);
    try {
      const readyz = await fetch(`${node.url}/readyz`);
      assert.equal(readyz.status, 200);
      const body = (await readyz.json()) as {
        ready: boolean;
        checks: Record<string, { ok: boolean }>;
        warnings: string[];
      };
      assert.equal(body.ready, true);
      assert.equal(body.checks.snowflake?.ok, true);
      assert.equal(body.warnings.length, 1);
      assert.match(
        body.warnings[0] ?? '',
        /^the snowflake time bits \(36\+15\+12, 1 ms units\) run out on \S+, in 54[45] days: plan a new layout/,
      );
      const left = Number(
        /^frond_snowflake_time_left_seconds (\S+)$/m.exec(await text(`${node.url}/metrics`))?.[1],
      );
      assert.ok(left > 365 * 86_400 && left < 3 * 365 * 86_400, `${left} s left`);
      assert.ok(Math.abs(left - (epoch + 2 ** 36 - Date.now()) / 1000) < 60);
      const stats = await json<{
        readiness: { warnings: string[] };
        snowflake: { layout: { timeLeftSeconds: number } };
      }>(`${node.url}/v1/stats`);
      assert.deepEqual(stats.readiness.warnings, body.warnings);
      assert.ok(Math.abs(stats.snowflake.layout.timeLeftSeconds - left) < 60);
      const warned = node.logs.find((line) => line.includes('"snowflake.time_bits_running_out"'));
      assert.ok(warned, 'the start logs a warning');
      assert.match(warned, /"level":"warn"/);
      // IDs are served as ever.
      const id = BigInt(await text(`${node.url}/api/snowflake/get/k`));
      assert.equal(layoutOf('36+15+12', 1, epoch).decompose(id).workerId, 9);
    } finally {
      await node.stop();
    }
    // Under 365 days left: no start.
    assertOneLineError(
      await runFrond([
        'serve',
        '--port',
        '0',
        '--data-dir',
        tempDir(),
        '--snowflake-layout',
        '36+15+12',
        '--epoch',
        String(Date.now() - 500 * DAY),
      ]),
      2,
      /^frond: --snowflake-layout 36\+15\+12 in 1 ms units from --epoch \d+ runs out on \S+, in 29[45] days: a layout must last at least 365 days from now/,
    );
  });
});

describe('worker IDs from StatefulSet ordinals on a real node', () => {
  it('takes the ordinal of HOSTNAME (plus the offset) as the worker ID, and keeps its time across a restart', async () => {
    const dataDir = tempDir();
    const env = { HOSTNAME: 'frond-7', FROND_WORKER_ID_ORDINAL: 'true' };
    const node = await serve([], env, dataDir);
    let last: bigint;
    try {
      const health = await json<{ snowflake: { workerId: number } }>(`${node.url}/healthz`);
      assert.equal(health.snowflake.workerId, 7);
      const { ids } = await json<{ ids: string[] }>(`${node.url}/v1/snowflake?count=100`);
      assert.ok(ids.every((id) => decodeSnowflake(id).workerId === 7));
      last = BigInt(ids.at(-1) as string);
    } finally {
      await node.stop();
    }
    // A restart of the pod (the same volume) starts above what the last run issued.
    const again = await serve(['--worker-id-offset', '0'], env, dataDir);
    try {
      const first = BigInt(await text(`${again.url}/api/snowflake/get/k`));
      assert.ok(first > last);
      assert.equal(decodeSnowflake(first).workerId, 7);
    } finally {
      await again.stop();
    }
    const offset = await serve(['--worker-id-ordinal', '--worker-id-offset', '100', ...SONY], {
      HOSTNAME: 'frond-7.frond-pods.default.svc.cluster.local',
    });
    try {
      const id = await text(`${offset.url}/api/snowflake/get/k`);
      assert.equal(decodeSnowflake(id, { snowflakeLayout: '39+16+8', timeUnitMs: 10 }).workerId, 107);
    } finally {
      await offset.stop();
    }
  });

  it('gives each process of --workers its own ID: pod 3 of --workers 2 runs worker IDs 6 and 7', async () => {
    const node = await startFrond(
      ['--port', '0', '--data-dir', tempDir(), '--no-segment', '--worker-id-ordinal', '--workers', '2'],
      { env: { HOSTNAME: 'frond-3' } },
    );
    try {
      const listening = JSON.parse(
        node.logs.find((line) => line.includes('"event":"listening"')) as string,
      ) as {
        snowflakeWorkerIds: number[];
      };
      assert.deepEqual([...listening.snowflakeWorkerIds].sort(), [6, 7]);
    } finally {
      await node.stop();
    }
  });

  it('refuses a hostname without -N, an ordinal past the worker bits, and a second source, in one line', async () => {
    const dataDir = tempDir();
    const serveWith = (hostname: string, ...args: string[]) =>
      runFrond(['serve', '--port', '0', '--data-dir', dataDir, '--worker-id-ordinal', ...args], {
        env: { HOSTNAME: hostname },
      });
    assertOneLineError(
      await serveWith('frond-7d4b9c-xk2p'),
      2,
      /^frond: --worker-id-ordinal: hostname "frond-7d4b9c-xk2p" does not end in -N, as a StatefulSet pod's \(frond-0, frond-1, …\); set HOSTNAME, or give --worker-id$/,
    );
    assertOneLineError(
      await serveWith('laptop'),
      2,
      /^frond: --worker-id-ordinal: hostname "laptop" does not end in -N/,
    );
    assertOneLineError(
      await serveWith('frond-1024'),
      2,
      /^frond: --worker-id-ordinal: hostname "frond-1024" gives worker ID 1024 \(ordinal 1024\), above 1023, the largest of 10 worker bits; use fewer replicas or more worker bits \(--snowflake-layout\)$/,
    );
    assertOneLineError(
      await serveWith('frond-1000', '--worker-id-offset', '24'),
      2,
      /gives worker ID 1024 \(--worker-id-offset 24 \+ ordinal 1000\), above 1023/,
    );
    assertOneLineError(
      await serveWith('frond-1', '--worker-id', '1'),
      2,
      /^frond: --worker-id and --worker-id-ordinal: pick one$/,
    );
    assertOneLineError(
      await serveWith('frond-1', '--etcd', 'http://127.0.0.1:2379', '--name', 'x'),
      2,
      /^frond: --worker-id-ordinal and --etcd: pick one$/,
    );
  });
});
