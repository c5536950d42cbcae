import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type AddressInfo, createConnection, createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { credentials, status } from '@grpc/grpc-js';
import { ERROR_CODES } from '../src/core/errors.js';
import { GRPC_STATUS } from '../src/server/grpc/grpc-status.js';
import {
  assertOneLineError,
  type FrondProcess,
  runFrond,
  startFrond,
  tempDir,
} from './support/frond-process.js';
import { freePort, GrpcTestClient, grpcAddressOf, selfSignedCertificate } from './support/grpc-client.js';
import { randomTag } from './support/random-tag.js';

const SECRET = randomBytes(32).toString('hex');

/** A tag made over the admin API (loopback, no admin token): `opaque` like `digits:12`. */
async function addTag(url: string, tag: string, opaque?: string): Promise<void> {
  const response = await fetch(`${url}/v1/tags`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tag, step: 1000, ...(opaque ? { opaque } : {}) }),
  });
  assert.equal(response.status, 201, await response.text());
}

async function startGrpcNode(args: string[], env: NodeJS.ProcessEnv = {}) {
  const grpcPort = await freePort();
  const node = await startFrond(
    ['--port', '0', '--host', '127.0.0.1', '--grpc-port', String(grpcPort), ...args],
    {
      env: { FROND_OPAQUE_SECRET: SECRET, ...env },
    },
  );
  const address = grpcAddressOf(node.logs);
  assert.equal(address, `127.0.0.1:${grpcPort}`);
  return { node, address };
}

describe('gRPC: frond.v1.Ids and grpc.health.v1.Health on --grpc-port', () => {
  let node: FrondProcess;
  let client: GrpcTestClient;
  const plain = randomTag('grpc');
  const opaque = randomTag('grpco');

  before(async () => {
    const started = await startGrpcNode(['--data-dir', tempDir()]);
    node = started.node;
    client = new GrpcTestClient(started.address);
    await addTag(node.url, plain);
    await addTag(node.url, opaque, 'digits:12');
  });
  after(async () => {
    client?.close();
    await node?.stop();
  });

  it('Next answers one ID of a tag, each above the last, as int64 strings', async () => {
    const first = await client.ok<{ id: string }>('Next', { tag: plain });
    const second = await client.ok<{ id: string }>('Next', { tag: plain });
    assert.match(first.id, /^[0-9]+$/);
    assert.ok(BigInt(second.id) > BigInt(first.id));
  });

  it('Batch answers count consecutive IDs; count 0 (unset) is 1', async () => {
    const batch = await client.ok<{ ids: string[] }>('Batch', { tag: plain, count: 2500 });
    assert.equal(batch.ids.length, 2500);
    for (let i = 1; i < batch.ids.length; i++)
      assert.ok(BigInt(batch.ids[i] as string) > BigInt(batch.ids[i - 1] as string));
    const one = await client.ok<{ ids: string[] }>('Batch', { tag: plain });
    assert.equal(one.ids.length, 1);
    assert.ok(BigInt(one.ids[0] as string) > BigInt(batch.ids.at(-1) as string));
  });

  it('Ranges answers runs [start, end) holding count IDs', async () => {
    const reply = await client.ok<{ ranges: { start: string; end: string }[]; count: number }>('Ranges', {
      tag: plain,
      count: 2500,
    });
    assert.equal(reply.count, 2500);
    let total = 0n;
    for (const run of reply.ranges) {
      assert.ok(BigInt(run.end) > BigInt(run.start));
      total += BigInt(run.end) - BigInt(run.start);
    }
    assert.equal(total, 2500n);
  });

  it('Snowflake answers count IDs, and Decode takes one apart with this node worker ID', async () => {
    const reply = await client.ok<{ ids: string[] }>('Snowflake', { count: 100 });
    assert.equal(reply.ids.length, 100);
    assert.equal(new Set(reply.ids).size, 100);
    const id = reply.ids[99] as string;
    // Above 2^53: a JavaScript number would have rounded it.
    assert.ok(BigInt(id) > 2n ** 53n);
    const http = (await (await fetch(`${node.url}/v1/snowflake/decode/${id}`)).json()) as Record<
      string,
      unknown
    >;
    const decoded = await client.ok<Record<string, unknown>>('Decode', { id });
    assert.deepEqual(decoded, {
      id,
      timestampMs: String(http.timestamp),
      time: http.time,
      workerId: http.workerId,
      sequence: http.sequence,
    });
  });

  it('an opaque tag answers opaque IDs on Next and Batch, and FAILED_PRECONDITION (OPAQUE_NO_RANGES) on Ranges', async () => {
    const one = await client.ok<{ id: string }>('Next', { tag: opaque });
    const batch = await client.ok<{ ids: string[] }>('Batch', { tag: opaque, count: 50 });
    const all = [one.id, ...batch.ids];
    assert.equal(new Set(all).size, 51);
    for (const id of all) assert.ok(BigInt(id) < 10n ** 12n, id);
    // Not consecutive: the opaque permutation scatters them.
    assert.ok(batch.ids.some((id, i) => i > 0 && BigInt(id) !== BigInt(batch.ids[i - 1] as string) + 1n));
    const ranges = await client.call('Ranges', { tag: opaque, count: 10 });
    assert.equal(ranges.error?.code, status.FAILED_PRECONDITION);
    assert.equal(ranges.frondCode, 'OPAQUE_NO_RANGES');
    assert.match(ranges.error?.details ?? '', /^OPAQUE_NO_RANGES: /);
  });

  it('maps frond codes to gRPC status codes, with the code in frond-code and in the message', async () => {
    const cases: [string, object, status, string][] = [
      ['Next', { tag: randomTag('missing') }, status.NOT_FOUND, 'TAG_NOT_FOUND'],
      ['Batch', { tag: randomTag('missing'), count: 3 }, status.NOT_FOUND, 'TAG_NOT_FOUND'],
      ['Next', { tag: '' }, status.INVALID_ARGUMENT, 'INVALID_TAG'],
      ['Next', { tag: 'a\u0001b' }, status.INVALID_ARGUMENT, 'INVALID_TAG'],
      ['Batch', { tag: plain, count: 10_001 }, status.INVALID_ARGUMENT, 'INVALID_COUNT'],
      ['Ranges', { tag: plain, count: 100_000_001 }, status.INVALID_ARGUMENT, 'INVALID_COUNT'],
      ['Snowflake', { count: 10_001 }, status.INVALID_ARGUMENT, 'INVALID_COUNT'],
      ['Decode', { id: '-1' }, status.INVALID_ARGUMENT, 'INVALID_ID'],
      ['Decode', { id: '9223372036854775807' }, status.OK, ''],
    ];
    for (const [method, request, code, frondCode] of cases) {
      const answer = await client.call(method, request);
      if (code === status.OK) {
        assert.equal(answer.error, undefined, `${method} ${JSON.stringify(request)}`);
        continue;
      }
      assert.equal(
        answer.error?.code,
        code,
        `${method} ${JSON.stringify(request)}: ${answer.error?.details}`,
      );
      assert.equal(answer.frondCode, frondCode);
      assert.match(answer.error?.details ?? '', new RegExp(`^${frondCode}: `));
    }
  });

  it('counts each call in /metrics: HTTP request histogram by route grpc_*, the status HTTP answers, frond_errors_total', async () => {
    const series = async () => {
      const text = await (await fetch(`${node.url}/metrics`)).text();
      const count = (route: string, code: number) =>
        Number(
          new RegExp(
            `^frond_http_request_duration_seconds_count\\{route="${route}",status="${code}"\\} (\\d+)$`,
            'm',
          ).exec(text)?.[1] ?? 0,
        );
      const errors = Number(/^frond_errors_total\{code="INVALID_COUNT"\} (\d+)$/m.exec(text)?.[1] ?? 0);
      return {
        next: count('grpc_next', 200),
        batch: count('grpc_batch', 200),
        bad: count('grpc_batch', 400),
        errors,
        text,
      };
    };
    const before = await series();
    for (let i = 0; i < 3; i++) await client.ok('Next', { tag: plain });
    await client.ok('Batch', { tag: plain, count: 4 });
    const bad = await client.call('Batch', { tag: plain, count: 10_001 });
    assert.equal(bad.frondCode, 'INVALID_COUNT');
    const after = await series();
    assert.equal(after.next - before.next, 3);
    assert.equal(after.batch - before.batch, 1);
    assert.equal(after.bad - before.bad, 1);
    assert.equal(after.errors - before.errors, 1);
    // The HTTP series keep their name and labels: gRPC adds routes, not a label.
    assert.match(
      after.text,
      /^frond_http_request_duration_seconds_bucket\{le="0\.00005",route="grpc_next",status="200"\} \d+$/m,
    );
  });

  it('refuses a request above 64 KiB before it is read (RESOURCE_EXHAUSTED)', async () => {
    const answer = await client.call('Next', { tag: 'x'.repeat(70_000) });
    assert.equal(answer.error?.code, status.RESOURCE_EXHAUSTED);
    // The node still answers afterwards.
    await client.ok('Next', { tag: plain });
  });

  it('health: SERVING for "" and frond.v1.Ids, NOT_FOUND for another service; Watch sends SERVING', async () => {
    for (const service of ['', 'frond.v1.Ids']) {
      const reply = await client.ok<{ status: string }>('Check', { service }, { service: 'health' });
      assert.equal(reply.status, 'SERVING');
    }
    const unknown = await client.call('Check', { service: 'other.Service' }, { service: 'health' });
    assert.equal(unknown.error?.code, status.NOT_FOUND);
    const watched = await new Promise<unknown>((resolve, reject) => {
      const stream = (
        client.health as unknown as { Watch(r: object): NodeJS.EventEmitter & { cancel(): void } }
      ).Watch({
        service: '',
      });
      const timer = setTimeout(() => reject(new Error('no Watch message')), 10_000);
      stream.on('data', (message: unknown) => {
        clearTimeout(timer);
        stream.cancel();
        resolve(message);
      });
      stream.on('error', () => {});
    });
    assert.deepEqual(watched, { status: 'SERVING' });
  });
});

describe('gRPC: tokens, TLS, modes and settings', () => {
  it('asks for the HTTP tokens as authorization: Bearer metadata (UNAUTHENTICATED without); health needs none', async () => {
    const { node, address } = await startGrpcNode([
      '--data-dir',
      tempDir(),
      '--token',
      'tok-a',
      '--token',
      'tok-b',
    ]);
    const client = new GrpcTestClient(address);
    try {
      for (const token of [undefined, 'tok-c', 'tok-a-']) {
        const answer = await client.call('Snowflake', { count: 1 }, token === undefined ? {} : { token });
        assert.equal(answer.error?.code, status.UNAUTHENTICATED, String(token));
        assert.equal(answer.frondCode, 'UNAUTHORIZED');
      }
      for (const token of ['tok-a', 'tok-b']) {
        const reply = await client.ok<{ ids: string[] }>('Snowflake', { count: 2 }, { token });
        assert.equal(reply.ids.length, 2);
      }
      const decode = await client.call('Decode', { id: '1' });
      assert.equal(decode.error?.code, status.UNAUTHENTICATED);
      const health = await client.ok<{ status: string }>('Check', { service: '' }, { service: 'health' });
      assert.equal(health.status, 'SERVING');
    } finally {
      client.close();
      await node.stop();
    }
  });

  it('speaks TLS with --tls-cert and --tls-key; a plaintext client is refused; --no-segment is UNIMPLEMENTED (MODE_DISABLED)', async () => {
    const dir = tempDir();
    const { cert, key } = selfSignedCertificate(dir);
    const { node, address } = await startGrpcNode([
      '--data-dir',
      join(dir, 'data'),
      '--tls-cert',
      cert,
      '--tls-key',
      key,
      '--no-segment',
    ]);
    assert.match(node.url, /^https:/);
    const secure = new GrpcTestClient(address, credentials.createSsl(readFileSync(cert)));
    const plaintext = new GrpcTestClient(address);
    try {
      const reply = await secure.ok<{ ids: string[] }>('Snowflake', { count: 3 });
      assert.equal(reply.ids.length, 3);
      const disabled = await secure.call('Next', { tag: 'any' });
      assert.equal(disabled.error?.code, status.UNIMPLEMENTED);
      assert.equal(disabled.frondCode, 'MODE_DISABLED');
      // HTTPS's TLS settings: a client offering only a CBC suite over TLS 1.2 is refused.
      const port = Number(address.split(':').at(-1));
      const cbc = await new Promise<string>((resolve) => {
        const socket = tlsConnect({
          host: '127.0.0.1',
          port,
          ca: readFileSync(cert),
          maxVersion: 'TLSv1.2',
          ciphers: 'ECDHE-ECDSA-AES128-SHA',
          ALPNProtocols: ['h2'],
        });
        socket.once('secureConnect', () => {
          socket.destroy();
          resolve('connected');
        });
        socket.once('error', (error) => resolve(error.message));
      });
      assert.notEqual(cbc, 'connected');
      const refused = await plaintext.call('Snowflake', { count: 1 }, { deadlineMs: 5_000 });
      assert.ok(refused.error !== undefined, 'a plaintext call to the TLS port was answered');
      assert.notEqual(refused.error.code, status.OK);
    } finally {
      secure.close();
      plaintext.close();
      await node.stop();
    }
  });

  it('health says NOT_SERVING while /readyz says not ready (store unreachable, nothing buffered)', async () => {
    const dir = tempDir();
    const { node, address } = await startGrpcNode([
      '--data-dir',
      dir,
      '--no-snowflake',
      '--store',
      'postgres://frond:x@127.0.0.1:1/none',
    ]);
    const client = new GrpcTestClient(address);
    try {
      const ready = await fetch(`${node.url}/readyz`);
      assert.equal(ready.status, 503);
      const reply = await client.ok<{ status: string }>(
        'Check',
        { service: 'frond.v1.Ids' },
        { service: 'health' },
      );
      assert.equal(reply.status, 'NOT_SERVING');
      const next = await client.call('Next', { tag: 'any' }, { deadlineMs: 30_000 });
      assert.equal(next.error?.code, status.UNAVAILABLE, next.error?.details);
    } finally {
      client.close();
      await node.stop();
    }
  });

  it('--grpc-max-connections: a connection past it is closed as it arrives and logged; those held keep working', async () => {
    const { node, address } = await startGrpcNode(['--data-dir', tempDir(), '--grpc-max-connections', '1']);
    const first = new GrpcTestClient(address, credentials.createInsecure(), OWN_CONNECTION);
    const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.split(':').at(-1))];
    try {
      await first.ok('Snowflake', { count: 1 });
      // A second connection: closed by the node without a byte (bounded by the 5 s timer).
      const closed = await new Promise<string>((resolve) => {
        const socket = createConnection({ host, port });
        const timer = setTimeout(() => {
          socket.destroy();
          resolve('still open after 5 s');
        }, 5_000);
        socket.on('error', () => {});
        socket.on('close', () => {
          clearTimeout(timer);
          resolve('closed');
        });
      });
      assert.equal(closed, 'closed');
      const second = new GrpcTestClient(address, credentials.createInsecure(), OWN_CONNECTION);
      try {
        const refused = await second.call('Snowflake', { count: 1 }, { deadlineMs: 2_000 });
        assert.ok(refused.error, 'a second connection was served');
      } finally {
        second.close();
      }
      await first.ok('Snowflake', { count: 1 });
      assert.ok(
        node.logs.some(
          (line) => line.includes('"grpc.connections_full"') && line.includes('--grpc-max-connections'),
        ),
        'no grpc.connections_full line',
      );
    } finally {
      first.close();
      await node.stop();
    }
  });

  it('refuses --grpc-port with --workers above 1, and a --grpc-port in use, in one line', async () => {
    const workers = await runFrond([
      'serve',
      '--data-dir',
      tempDir(),
      '--grpc-port',
      '50999',
      '--workers',
      '2',
    ]);
    assertOneLineError(workers, 2, /--grpc-port .*--workers/);
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as AddressInfo).port;
    try {
      const taken = await runFrond([
        'serve',
        '--data-dir',
        tempDir(),
        '--host',
        '127.0.0.1',
        '--port',
        '0',
        '--grpc-port',
        String(port),
      ]);
      assertOneLineError(taken, 2, new RegExp(`port ${port} on 127.0.0.1 is in use \\(--grpc-port\\)`));
    } finally {
      holder.close();
    }
  });
});

/** A client of its own connection (grpc-js shares one between clients of one target otherwise). */
const OWN_CONNECTION = { 'grpc.use_local_subchannel_pool': 1 };

describe('gRPC: the same guarantees as HTTP', () => {
  it('8 concurrent clients × 500 Next calls on a plain and an opaque tag, beside HTTP: no ID twice, each client in order', async () => {
    const { node, address } = await startGrpcNode(['--data-dir', tempDir()]);
    const plain = randomTag('grpcu');
    const opaque = randomTag('grpcuo');
    const clients = Array.from({ length: 8 }, () => new GrpcTestClient(address, undefined, OWN_CONNECTION));
    try {
      await addTag(node.url, plain);
      await addTag(node.url, opaque, 'bits:40');
      for (const tag of [plain, opaque]) {
        const perClient = clients.map(async (client) => {
          const ids: bigint[] = [];
          for (let i = 0; i < 500; i++)
            ids.push(BigInt((await client.ok<{ id: string }>('Next', { tag })).id));
          return ids;
        });
        // HTTP on the same tag at the same time: one issuer behind both.
        const overHttp = (async () => {
          const ids: bigint[] = [];
          for (let i = 0; i < 200; i++) {
            const response = await fetch(`${node.url}/api/segment/get/${tag}`);
            assert.equal(response.status, 200);
            ids.push(BigInt(await response.text()));
          }
          return ids;
        })();
        const lists = await Promise.all([...perClient, overHttp]);
        const all = lists.flat();
        assert.equal(all.length, 8 * 500 + 200);
        assert.equal(new Set(all).size, all.length, `${tag}: an ID was issued twice`);
        if (tag === plain)
          for (const ids of lists)
            for (let i = 1; i < ids.length; i++) assert.ok((ids[i] as bigint) > (ids[i - 1] as bigint));
        else for (const id of all) assert.ok(id < 2n ** 40n);
      }
    } finally {
      for (const client of clients) client.close();
      await node.stop();
    }
  });

  it('SIGKILL mid-traffic and a restart on the same data dir: no ID repeated, later plain and snowflake IDs higher', async () => {
    const dataDir = tempDir();
    const plain = randomTag('grpck');
    const opaque = randomTag('grpcko');
    const seen = { plain: [] as bigint[], opaque: [] as bigint[], snowflake: [] as bigint[] };
    const first = await startGrpcNode(['--data-dir', dataDir]);
    await addTag(first.node.url, plain);
    await addTag(first.node.url, opaque, 'digits:12');
    const clients = Array.from(
      { length: 4 },
      () => new GrpcTestClient(first.address, undefined, OWN_CONNECTION),
    );
    let killed = false;
    // Four clients loop until the kill: every reply that arrived before it is kept.
    const traffic = clients.map(async (client, k) => {
      for (let i = 0; i < 5_000 && !killed; i++) {
        if (k === 0) {
          const answer = await client.call<{ ids: string[] }>(
            'Snowflake',
            { count: 50 },
            { deadlineMs: 5_000 },
          );
          if (answer.reply) seen.snowflake.push(...answer.reply.ids.map(BigInt));
        } else if (k === 1) {
          const answer = await client.call<{ ids: string[] }>(
            'Batch',
            { tag: opaque, count: 20 },
            { deadlineMs: 5_000 },
          );
          if (answer.reply) seen.opaque.push(...answer.reply.ids.map(BigInt));
        } else {
          const answer =
            k === 2
              ? await client.call<{ id: string }>('Next', { tag: plain }, { deadlineMs: 5_000 })
              : await client.call<{ ids: string[] }>(
                  'Batch',
                  { tag: plain, count: 30 },
                  { deadlineMs: 5_000 },
                );
          const reply = answer.reply as { id?: string; ids?: string[] } | undefined;
          if (reply?.id !== undefined) seen.plain.push(BigInt(reply.id));
          if (reply?.ids !== undefined) seen.plain.push(...reply.ids.map(BigInt));
        }
      }
    });
    // Bounded: until each kind has IDs and a little more, at most 30 s.
    for (let waited = 0; waited < 30_000; waited += 50) {
      if (seen.plain.length > 2_000 && seen.opaque.length > 500 && seen.snowflake.length > 2_000) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(await first.node.stop('SIGKILL'), 'SIGKILL');
    killed = true;
    await Promise.all(traffic);
    for (const client of clients) client.close();
    const before = { plain: [...seen.plain], opaque: [...seen.opaque], snowflake: [...seen.snowflake] };
    assert.ok(before.plain.length > 0 && before.opaque.length > 0 && before.snowflake.length > 0);

    const second = await startGrpcNode(['--data-dir', dataDir]);
    const client = new GrpcTestClient(second.address);
    try {
      const plainAfter = [
        BigInt((await client.ok<{ id: string }>('Next', { tag: plain })).id),
        ...(await client.ok<{ ids: string[] }>('Batch', { tag: plain, count: 500 })).ids.map(BigInt),
      ];
      const opaqueAfter = (await client.ok<{ ids: string[] }>('Batch', { tag: opaque, count: 500 })).ids.map(
        BigInt,
      );
      const snowflakeAfter = (await client.ok<{ ids: string[] }>('Snowflake', { count: 500 })).ids.map(
        BigInt,
      );
      const sorted = (ids: bigint[]) => [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      const max = (ids: bigint[]) => sorted(ids).at(-1) as bigint;
      const min = (ids: bigint[]) => sorted(ids)[0] as bigint;
      assert.ok(
        min(plainAfter) > max(before.plain),
        'a plain ID after the restart is not above those before',
      );
      assert.ok(
        min(snowflakeAfter) > max(before.snowflake),
        'a snowflake ID after the restart is not above those before',
      );
      for (const [name, all] of [
        ['plain', [...before.plain, ...plainAfter]],
        ['opaque', [...before.opaque, ...opaqueAfter]],
        ['snowflake', [...before.snowflake, ...snowflakeAfter]],
      ] as const)
        assert.equal(new Set(all).size, all.length, `${name}: an ID was issued twice`);
    } finally {
      client.close();
      await second.node.stop();
    }
  });
});

describe('gRPC: the error table of docs/grpc.md', () => {
  it('lists every frond code with the gRPC status grpc-status.ts answers', () => {
    const doc = readFileSync(new URL('../docs/grpc.md', import.meta.url), 'utf8');
    const names = new Map(Object.entries(status).map(([name, value]) => [value, name]));
    for (const [code, answered] of Object.entries(GRPC_STATUS)) {
      const row = new RegExp(
        `^\\| \`${code}\` +\\| \`${names.get(answered)}\` +\\| ${ERROR_CODES[code as keyof typeof ERROR_CODES].status} +\\|$`,
        'm',
      );
      assert.match(doc, row, `docs/grpc.md: the row of ${code}`);
    }
  });
});
