import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type ConnectionOptions, connect as tlsConnect } from 'node:tls';
import { systemClock } from '../src/core/clock.js';
import { FrondError } from '../src/core/errors.js';
import { type Logger, silentLogger } from '../src/core/logger.js';
import { DEFAULT_SEGMENT_ALLOCATOR_OPTIONS, SegmentAllocator } from '../src/core/segment-allocator.js';
import { readiness } from '../src/server/ops/readiness.js';
import { StatsSampler } from '../src/server/ops/stats-sampler.js';
import { FROND_VERSION } from '../src/server/ops/version.js';
import type { ServeConfig } from '../src/server/start/serve-config.js';
import { type RunningServer, startServer } from '../src/server/start/start-server.js';
import { runFrond, startFrond, tempDir } from './support/frond-process.js';
import { MemoryStore } from './support/memory-store.js';
import { randomTag } from './support/random-tag.js';
import { testServeConfig } from './support/serve-config.js';

function config(dataDir: string, overrides: Partial<ServeConfig> = {}): ServeConfig {
  return testServeConfig(dataDir, { workerId: 9, ...overrides });
}

async function call(url: string, init: RequestInit = {}) {
  const response = await fetch(url, init);
  const text = await response.text();
  return { status: response.status, text, json: () => JSON.parse(text) as Record<string, unknown> };
}

function post(url: string, body: unknown, token?: string, method = 'POST') {
  return call(url, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

describe('operations API (real server)', () => {
  let server: RunningServer;
  const tag = randomTag();

  before(async () => {
    server = await startServer(config(tempDir()), silentLogger, systemClock);
  });
  after(() => server.close());

  it('adds a tag with POST /v1/tags (201), refuses it twice (409), and serves it at once', async () => {
    const created = await post(`${server.url}/v1/tags`, {
      tag,
      step: 100,
      start: 5000,
      description: 'orders',
    });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(
      { ...created.json(), updateTime: undefined },
      { tag, maxId: '5000', step: 100, description: 'orders', updateTime: undefined },
    );
    assert.equal((await post(`${server.url}/v1/tags`, { tag, step: 10 })).status, 409);
    assert.equal((await call(`${server.url}/api/segment/get/${tag}`)).text, '5000');
  });

  it('changes a step with PATCH /v1/tags/{tag} and lists tags with GET /v1/tags', async () => {
    const patched = await post(`${server.url}/v1/tags/${tag}`, { step: 250 }, undefined, 'PATCH');
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.json().step, 250);
    assert.equal(
      (await post(`${server.url}/v1/tags/${randomTag()}`, { step: 5 }, undefined, 'PATCH')).status,
      404,
    );
    const list = (await call(`${server.url}/v1/tags`)).json() as { tags: { tag: string }[] };
    assert.ok(list.tags.some((row) => row.tag === tag));
  });

  it('defaults the step of POST /v1/tags to 1000, as frond tag add; PATCH names the real step range (item 18)', async () => {
    const created = await post(`${server.url}/v1/tags`, { tag: randomTag() });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.json().step, 1000);
    const patched = await post(`${server.url}/v1/tags/${tag}`, { step: 2 ** 53 }, undefined, 'PATCH');
    assert.equal(patched.status, 400);
    assert.match(patched.text, /step must be an integer from 1 to 2147483647/);
  });

  it('answers 405 with the Allow header of the route: PUT /v1/tags/x allows GET, PATCH, DELETE (item 18)', async () => {
    const reply = await fetch(`${server.url}/v1/tags/${tag}`, { method: 'PUT' });
    assert.equal(reply.status, 405);
    assert.equal(reply.headers.get('allow'), 'GET, PATCH, DELETE, OPTIONS');
    assert.match(await reply.text(), /use GET or PATCH or DELETE/);
    const options = await fetch(`${server.url}/v1/tags`, { method: 'OPTIONS' });
    assert.equal(options.status, 204);
    assert.equal(options.headers.get('allow'), 'GET, POST, OPTIONS');
  });

  it('answers bad admin bodies with 400 or 413, naming the problem', async () => {
    const cases: [unknown, number, RegExp][] = [
      ['{"tag": ', 400, /not JSON/],
      [{ tag: 'x', step: 10, colour: 'red' }, 400, /unknown field "colour"/],
      [{ tag: 'bad\ttag', step: 10 }, 400, /invalid tag/],
      [{ tag: 'x'.repeat(129), step: 10 }, 400, /invalid tag/],
      [{ tag: randomTag(), step: 0 }, 400, /step must be an integer from 1 to 2147483647/],
      [{ tag: randomTag(), step: 2 ** 31 }, 400, /step must be an integer from 1 to 2147483647/],
      [{ tag: randomTag(), step: 10, start: 1.5 }, 400, /start must be an integer/],
      [{ tag: randomTag(), step: 10, start: 2 ** 60 }, 400, /start must be an integer/],
      [{ tag: randomTag(), step: 10, start: '9223372036854775798' }, 400, /invalid start/],
      [{ tag: randomTag(), step: 10, start: '-9223372036854775809' }, 400, /invalid start/],
      [{ tag: randomTag(), step: 10, description: 'x'.repeat(300) }, 400, /description/],
      ['x'.repeat(20_000), 413, /over 16384 bytes/],
    ];
    for (const [body, status, pattern] of cases) {
      const reply = await post(`${server.url}/v1/tags`, body);
      assert.equal(reply.status, status, reply.text);
      assert.match((reply.json() as { error: { message: string } }).error.message, pattern);
    }
  });

  it('exports Prometheus metrics named frond_…: IDs issued, buffers, runway, step, worker ID, latency, errors', async () => {
    for (let i = 0; i < 30; i++) await call(`${server.url}/api/segment/get/${tag}`);
    await call(`${server.url}/api/snowflake/get/x`);
    await call(`${server.url}/api/segment/get/${randomTag()}`);
    // The second load (which reads the step PATCHed to 250) runs in the background: on a loaded
    // machine it may finish after the first scrape, so scrape again until it has (bounded: 2 s).
    let text = (await call(`${server.url}/metrics`)).text;
    const stepped = new RegExp(`^frond_segment_step\\{tag="${tag}"\\} 250$`, 'm');
    for (let i = 0; i < 40 && !stepped.test(text); i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      text = (await call(`${server.url}/metrics`)).text;
    }
    assert.match(text, new RegExp(`^frond_ids_issued_total\\{mode="segment",tag="${tag}"\\} 3\\d$`, 'm'));
    // Snowflake IDs are counted by worker ID, not under tag="" (item 17).
    assert.match(text, /^frond_ids_issued_total\{mode="snowflake",worker_id="9"\} [1-9]/m);
    assert.doesNotMatch(text, /tag=""/);
    // prom-client's defaults on frond's registry (item 17).
    assert.match(text, /^process_cpu_user_seconds_total \d/m);
    assert.match(text, /^process_open_fds \d+/m);
    assert.match(text, /^nodejs_eventloop_lag_seconds \d/m);
    assert.match(text, /^nodejs_heap_size_used_bytes \d/m);
    assert.match(text, new RegExp(`^frond_segment_ids_left\\{tag="${tag}"\\} \\d+`, 'm'));
    // The second load read the step PATCHed to 250 above.
    assert.match(text, new RegExp(`^frond_segment_step\\{tag="${tag}"\\} 250$`, 'm'));
    assert.match(text, /^frond_snowflake_worker_id 9$/m);
    assert.match(
      text,
      new RegExp(
        `^frond_build_info\\{version="${FROND_VERSION.replace(/\./g, '\\.')}",node="[0-9.]+"\\} 1$`,
        'm',
      ),
    );
    assert.match(
      text,
      /^frond_http_request_duration_seconds_count\{route="leaf_segment",status="200"\} 3\d/m,
    );
    assert.match(text, /^frond_errors_total\{code="TAG_NOT_FOUND"\} [1-9]/m);
    assert.match(text, /^frond_segment_load_duration_seconds_count \d+/m);
    assert.match(text, /^# TYPE frond_segment_runway_seconds gauge$/m);
  });

  it('serves /v1/stats for the dashboard, and the dashboard page itself', async () => {
    const fresh = randomTag();
    assert.equal((await post(`${server.url}/v1/tags`, { tag: fresh, step: 1000 })).status, 201);
    assert.equal((await call(`${server.url}/api/segment/get/${fresh}`)).status, 200);
    const stats = (await call(`${server.url}/v1/stats`)).json() as {
      tags: { tag: string; issued: number; lastLoadAt: number }[];
      snowflake: { workerId: number };
      history: unknown[];
      version: string;
      uptimeSeconds: number;
      store: { kind: string; reachable: boolean };
      readiness: { ready: boolean; checks: Record<string, { ok: boolean }> };
      requests: { windowSeconds: number; perSecond: number; errorsPerSecond: number };
    };
    // What the dashboard's cards show, from the one poll (issue 16, item 16).
    assert.equal(stats.version, FROND_VERSION);
    assert.ok(stats.uptimeSeconds >= 0 && stats.uptimeSeconds < 600, String(stats.uptimeSeconds));
    assert.deepEqual(
      { kind: stats.store.kind, reachable: stats.store.reachable },
      { kind: 'sqlite', reachable: true },
    );
    assert.equal(stats.readiness.ready, true);
    assert.equal(stats.readiness.checks.segment?.ok, true);
    assert.equal(typeof stats.requests.perSecond, 'number');
    assert.equal(typeof stats.requests.errorsPerSecond, 'number');
    assert.ok((stats.tags.find((t) => t.tag === tag)?.issued ?? 0) > 0);
    // A tag loaded once says when (item 18: it said 0).
    const loadedAt = stats.tags.find((t) => t.tag === fresh)?.lastLoadAt ?? 0;
    assert.ok(Math.abs(loadedAt - Date.now()) < 60_000, String(loadedAt));
    assert.equal(stats.snowflake.workerId, 9);
    assert.ok(Array.isArray(stats.history));
    const response = await fetch(`${server.url}/dashboard`);
    assert.equal(response.status, 200);
    assert.match(await response.text(), /<title>frond dashboard<\/title>/);
    // The page runs only its own inline script, by hash, and reaches only its own node.
    const csp = response.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'sha256-[A-Za-z0-9+/]+=*'/);
    assert.match(csp, /connect-src 'self'/);
    assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
  });

  it('is ready (/readyz 200) with a reachable store and a worker ID', async () => {
    const ready = await call(`${server.url}/readyz`);
    assert.equal(ready.status, 200, ready.text);
    assert.equal(ready.json().ready, true);
  });
});

describe('readiness', () => {
  it('is what /healthz reports but does not act on: 200 live, ready false, store unreachable (item 15)', async () => {
    const server = await startServer(
      config(tempDir(), { store: 'postgres://frond@127.0.0.1:1/nope?connect_timeout_ms=500' }),
      silentLogger,
      systemClock,
    );
    try {
      const health = await call(`${server.url}/healthz`);
      assert.equal(health.status, 200);
      const body = health.json() as { ready: boolean; checks: string; segment: { reachable: boolean } };
      assert.equal(body.ready, false);
      assert.equal(body.segment.reachable, false);
      assert.match(body.checks, /readyz/);
      assert.equal((await call(`${server.url}/readyz`)).status, 503);
    } finally {
      await server.close();
    }
  });

  it('is not ready when the store cannot be reached and nothing is buffered', async () => {
    const store = new MemoryStore();
    store.listTags = async () => {
      throw new Error('connection refused');
    };
    const segment = new SegmentAllocator(store, systemClock, silentLogger, DEFAULT_SEGMENT_ALLOCATOR_OPTIONS);
    await segment.start();
    const stats = new StatsSampler(systemClock);
    stats.attach(segment, undefined);
    const result = readiness(segment, undefined, stats);
    segment.close();
    assert.equal(result.ready, false);
    assert.match(result.checks.segment?.detail ?? '', /unreachable and nothing buffered/);
  });

  it('says the store refuses, with what it lacks, when it answered INVALID_CONFIG (a privilege, a table)', async () => {
    const store = new MemoryStore();
    const refusal = 'postgres://leaf@db/ids: the account leaf lacks INSERT on frond_high_water, which …';
    store.listTags = async () => {
      throw new FrondError('INVALID_CONFIG', refusal);
    };
    const segment = new SegmentAllocator(store, systemClock, silentLogger, DEFAULT_SEGMENT_ALLOCATOR_OPTIONS);
    await segment.start();
    const stats = new StatsSampler(systemClock);
    stats.attach(segment, undefined);
    const result = readiness(segment, undefined, stats);
    segment.close();
    assert.equal(result.ready, false);
    assert.equal(result.checks.segment?.detail, `store answers but refuses (nothing buffered): ${refusal}`);
  });
});

describe('access control (real server)', () => {
  it('requires a token for IDs when --token is set, as a bearer header or ?token=', async () => {
    const server = await startServer(
      config(tempDir(), { tokens: ['alpha', 'beta'] }),
      silentLogger,
      systemClock,
    );
    try {
      const denied = await call(`${server.url}/api/snowflake/get/x`);
      assert.equal(denied.status, 401);
      // Leaf's endpoint: frond's 401, in Spring Boot's error shape.
      assert.match(denied.text, /"error":"Unauthorized"/);
      assert.equal((await call(`${server.url}/v1/snowflake`)).status, 401);
      assert.match((await call(`${server.url}/v1/snowflake`)).text, /UNAUTHORIZED/);
      assert.equal(
        (await call(`${server.url}/api/snowflake/get/x`, { headers: { authorization: 'Bearer beta' } }))
          .status,
        200,
      );
      assert.equal((await call(`${server.url}/v1/snowflake?count=2&token=alpha`)).status, 200);
      assert.equal((await call(`${server.url}/v1/snowflake?token=gamma`)).status, 401);
      assert.equal((await call(`${server.url}/healthz`)).status, 200, 'health stays open');
    } finally {
      await server.close();
    }
  });

  it('requires the admin token for the admin API when --admin-token is set', async () => {
    const server = await startServer(config(tempDir(), { adminToken: 's3cret' }), silentLogger, systemClock);
    try {
      assert.equal((await post(`${server.url}/v1/tags`, { tag: randomTag(), step: 5 })).status, 401);
      assert.equal((await post(`${server.url}/v1/tags`, { tag: randomTag(), step: 5 }, 'wrong')).status, 401);
      const added = randomTag();
      assert.equal((await post(`${server.url}/v1/tags`, { tag: added, step: 5 }, 's3cret')).status, 201);
      const remove = (token?: string) =>
        call(`${server.url}/v1/tags/${added}`, {
          method: 'DELETE',
          headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
        });
      assert.equal((await remove()).status, 401);
      assert.equal((await remove('wrong')).status, 401);
      assert.equal(
        (await call(`${server.url}/v1/tags/${added}`, { headers: { authorization: 'Bearer s3cret' } }))
          .status,
        200,
        'not removed',
      );
      assert.equal((await remove('s3cret')).status, 200);
    } finally {
      await server.close();
    }
  });

  it('answers 429 once a client passes --rate-limit requests per second', async () => {
    const server = await startServer(config(tempDir(), { rateLimit: 5 }), silentLogger, systemClock);
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) statuses.push((await call(`${server.url}/api/snowflake/get/x`)).status);
      assert.deepEqual(statuses.slice(0, 5), [200, 200, 200, 200, 200]);
      assert.ok(statuses.slice(5).includes(429), statuses.join(','));
      // A health checker behind the same address is never refused (item 11).
      for (let i = 0; i < 10; i++) {
        assert.equal((await call(`${server.url}/healthz`)).status, 200);
        assert.equal((await call(`${server.url}/readyz`)).status, 200);
      }
    } finally {
      await server.close();
    }
  });

  it('speaks HTTPS with --tls-cert and --tls-key', async () => {
    const dir = tempDir();
    const key = join(dir, 'key.pem');
    const cert = join(dir, 'cert.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
      ],
      {
        stdio: 'ignore',
      },
    );
    const server = await startServer(config(dir, { tls: { cert, key } }), silentLogger, systemClock);
    try {
      assert.match(server.url, /^https:\/\//);
      const body = await new Promise<string>((resolve, reject) => {
        const req = httpsRequest(
          `${server.url}/api/snowflake/get/x`,
          { rejectUnauthorized: false },
          (res) => {
            let text = '';
            res.on('data', (chunk) => {
              text += chunk;
            });
            res.on('end', () => resolve(text));
          },
        );
        req.on('error', reject);
        req.end();
      });
      assert.match(body, /^[0-9]{19}$/);
    } finally {
      await server.close();
    }
  });
});

function selfSigned(dir: string, ...newkey: string[]): { cert: string; key: string } {
  const name = newkey.join('').replace(/\W/g, '');
  const key = join(dir, `${name}-key.pem`);
  const cert = join(dir, `${name}-cert.pem`);
  const args = ['req', '-x509', '-newkey', ...newkey, '-nodes', '-keyout', key, '-out', cert];
  execFileSync('openssl', [...args, '-days', '1', '-subj', '/CN=127.0.0.1'], { stdio: 'ignore' });
  return { cert, key };
}

/** Resolves with the negotiated cipher, or rejects with the handshake's error. */
function handshake(url: string, options: ConnectionOptions): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = tlsConnect(
      { host: hostname, port: Number(port), rejectUnauthorized: false, ...options },
      () => {
        const name = socket.getCipher().name;
        socket.end();
        resolve(name);
      },
    );
    socket.setTimeout(5000, () => socket.destroy(new Error('handshake timed out')));
    socket.on('error', reject);
  });
}

describe('TLS on the HTTPS listener (item 9)', () => {
  it('offers TLS 1.3 and TLS 1.2 with ECDHE and AEAD only: no AES128-SHA, no TLS 1.1', async () => {
    const dir = tempDir();
    const server = await startServer(
      config(dir, { tls: selfSigned(dir, 'rsa:2048') }),
      silentLogger,
      systemClock,
    );
    try {
      await assert.rejects(handshake(server.url, { ciphers: 'AES128-SHA', maxVersion: 'TLSv1.2' }));
      await assert.rejects(
        handshake(server.url, { ciphers: 'AES256-SHA:AES128-GCM-SHA256', maxVersion: 'TLSv1.2' }),
      );
      await assert.rejects(handshake(server.url, { maxVersion: 'TLSv1.1', minVersion: 'TLSv1' }));
      assert.equal(
        await handshake(server.url, { ciphers: 'ECDHE-RSA-AES128-GCM-SHA256', maxVersion: 'TLSv1.2' }),
        'ECDHE-RSA-AES128-GCM-SHA256',
      );
      assert.match(await handshake(server.url, { minVersion: 'TLSv1.3' }), /^TLS_AES_|^TLS_CHACHA20/);
    } finally {
      await server.close();
    }
  });

  it('refuses an RSA key under 2048 bits at start, with one line; an EC key is fine', async () => {
    const dir = tempDir();
    await assert.rejects(
      startServer(config(dir, { tls: selfSigned(dir, 'rsa:1024') }), silentLogger, systemClock),
      /1024-bit RSA key, too weak/,
    );
    const ec = selfSigned(dir, 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256');
    const server = await startServer(config(tempDir(), { tls: ec }), silentLogger, systemClock);
    try {
      assert.equal(await handshake(server.url, { maxVersion: 'TLSv1.2' }), 'ECDHE-ECDSA-AES128-GCM-SHA256');
    } finally {
      await server.close();
    }
  });
});

describe('request limits (item 18)', () => {
  it('answers a request that trickles past --request-timeout-ms with 408 within a second of it, oversize headers with 431', async () => {
    const server = await startServer(
      config(tempDir(), { requestTimeoutMs: 1000 }),
      silentLogger,
      systemClock,
    );
    try {
      const port = Number(new URL(server.url).port);
      const raw = (first: string, more?: string) =>
        new Promise<{ text: string; ms: number }>((resolve) => {
          const started = performance.now();
          let text = '';
          const socket = connect(port, '127.0.0.1', () => {
            socket.write(first);
            if (more !== undefined) socket.write(more);
          });
          socket.setTimeout(10_000, () => socket.destroy());
          socket.on('data', (chunk) => {
            text += chunk;
          });
          socket.on('close', () => resolve({ text, ms: performance.now() - started }));
        });
      const slow = await raw('GET /healthz HTTP/1.1\r\nhost: x\r\n');
      assert.match(slow.text, /^HTTP\/1\.1 408 /);
      assert.ok(slow.ms >= 900 && slow.ms < 2500, `cut after ${slow.ms} ms`);
      const big = await raw(`GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`);
      assert.match(big.text, /^HTTP\/1\.1 431 /);
      assert.equal((await call(`${server.url}/healthz`)).status, 200);
    } finally {
      await server.close();
    }
  });
});

describe('a client that aborts an admin body (item 18)', () => {
  it('is neither an internal error in the log nor counted in frond_errors_total', async () => {
    const events: string[] = [];
    const logger: Logger = { log: (_level, event) => void events.push(event) };
    const server = await startServer(config(tempDir()), logger, systemClock);
    try {
      const { port } = new URL(server.url);
      await new Promise<void>((resolve) => {
        const socket = connect(Number(port), '127.0.0.1', () => {
          socket.write(
            'POST /v1/tags HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"tag":',
          );
          setTimeout(() => socket.destroy(), 100);
        });
        socket.on('close', () => resolve());
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const metrics = (await call(`${server.url}/metrics`)).text;
      assert.doesNotMatch(metrics, /frond_errors_total\{code="INTERNAL"\}/);
      assert.ok(!events.includes('http.internal_error'), events.join(','));
      assert.ok(events.includes('http.client_aborted'), events.join(','));
    } finally {
      await server.close();
    }
  });
});

describe('configuration sources (real process)', () => {
  it('reads a JSON --config file and a Leaf leaf.properties, flags winning over both', async () => {
    const dir = tempDir();
    const file = join(dir, 'frond.json');
    writeFileSync(file, JSON.stringify({ 'data-dir': dir, 'worker-id': 31, port: 1 }));
    const leaf = join(dir, 'leaf.properties');
    writeFileSync(leaf, 'leaf.name=test\nleaf.segment.enable=false\nleaf.snowflake.enable=true\n');
    const node = await startFrond(['--config', file, '--leaf-config', leaf, '--port', '0']);
    try {
      const health = (await call(`${node.url}/healthz`)).json() as {
        segment: unknown;
        snowflake: { workerId: number };
      };
      assert.equal(health.snowflake.workerId, 31);
      assert.equal(health.segment, null);
    } finally {
      await node.stop();
    }
  });

  it('stops with one line for an unknown config key or FROND_ variable', async () => {
    const dir = tempDir();
    const file = join(dir, 'frond.json');
    writeFileSync(file, JSON.stringify({ prot: 8080 }));
    const bad = await runFrond(['serve', '--config', file]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^frond: .*frond\.json: unknown key "prot" \(did you mean port\?\)\n$/);
    const env = await runFrond(['serve', '--data-dir', dir], { env: { FROND_PROT: '1' } });
    assert.equal(env.code, 2);
    assert.match(env.stderr, /^frond: unknown environment variable FROND_PROT/);
  });

  it('logs JSON lines through pino with level, time and event', async () => {
    const node = await startFrond(['--port', '0', '--data-dir', tempDir()]);
    await node.stop();
    const listening = JSON.parse(node.logs.find((line) => line.includes('"listening"')) ?? '{}') as Record<
      string,
      unknown
    >;
    assert.equal(listening.level, 'info');
    assert.equal(typeof listening.time, 'string');
    assert.equal(listening.event, 'listening');
  });
});

describe('removing a tag through the admin API', () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer(config(tempDir()), silentLogger, systemClock);
    // Another tag, so the table is never empty (an empty tag list drops no buffer: docs/api.md).
    assert.equal((await post(`${server.url}/v1/tags`, { tag: randomTag(), step: 10 })).status, 201);
  });
  after(() => server.close());

  const idsOf = (reply: { status: number; text: string }): bigint[] => {
    assert.equal(reply.status, 200, reply.text);
    return (JSON.parse(reply.text) as { ids: string[] }).ids.map(BigInt);
  };

  it('removes a tag with DELETE /v1/tags/{tag}: the max_id kept, served no more at once, added again above', async () => {
    const gone = randomTag();
    assert.equal((await post(`${server.url}/v1/tags`, { tag: gone, step: 10 })).status, 201);
    const served: bigint[] = [];
    for (let i = 0; i < 15; i++) served.push(...idsOf(await call(`${server.url}/v1/segment/${gone}`)));
    const read = BigInt((await call(`${server.url}/v1/tags/${gone}`)).json().maxId as string);
    const removed = await call(`${server.url}/v1/tags/${gone}`, { method: 'DELETE' });
    assert.equal(removed.status, 200, removed.text);
    // The row's max_id: what the node was granted up to (a preload may have moved it on since).
    const kept = BigInt(removed.json().maxId as string);
    assert.deepEqual(removed.json(), { tag: gone, maxId: kept.toString() });
    assert.ok(kept >= read && kept > 15n, `kept ${kept}`);
    // This node dropped its buffer before it answered: the tag is gone from every route at once.
    for (const path of [`/v1/segment/${gone}`, `/v1/tags/${gone}`]) {
      const reply = await call(`${server.url}${path}`);
      assert.equal(reply.status, 404, `${path}: ${reply.text}`);
      assert.equal((reply.json() as { error: { code: string } }).error.code, 'TAG_NOT_FOUND');
    }
    assert.ok(!(await call(`${server.url}/db`)).text.includes(gone), '/db lists it no more');
    assert.ok(!(await call(`${server.url}/cache`)).text.includes(gone), '/cache lists it no more');
    const again = await call(`${server.url}/v1/tags/${gone}`, { method: 'DELETE' });
    assert.equal(again.status, 404, again.text);
    assert.match(again.text, /"TAG_NOT_FOUND".*has no row in leaf_alloc/);
    // Added again from 1: the row starts at the max_id kept, and so do its IDs.
    const back = await post(`${server.url}/v1/tags`, { tag: gone, step: 10, start: 1 });
    assert.equal(back.status, 201, back.text);
    assert.equal(back.json().maxId, kept.toString());
    // A node remembers a tag it found missing for 1 s (no flag): 404 until then.
    let reply = await call(`${server.url}/v1/segment/${gone}`);
    for (let i = 0; i < 40 && reply.status === 404; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      reply = await call(`${server.url}/v1/segment/${gone}`);
    }
    const [next] = idsOf(reply);
    assert.equal(next, kept);
    assert.ok(served.every((id) => id < kept));
    assert.equal(
      (await call(`${server.url}/v1/tags/bad%09tag`, { method: 'DELETE' })).status,
      400,
      'an invalid tag is 400',
    );
  });
});
