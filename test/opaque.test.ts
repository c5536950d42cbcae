import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createClient } from '../packages/client/src/index.js';
import { systemClock } from '../src/core/clock.js';
import { silentLogger } from '../src/core/logger.js';
import { OpaqueSecret } from '../src/server/opaque/opaque-keys.js';
import type { ServeConfig } from '../src/server/start/serve-config.js';
import { type RunningServer, startServer } from '../src/server/start/start-server.js';
import { tempDir } from './support/frond-process.js';
import { randomTag } from './support/random-tag.js';
import { testServeConfig } from './support/serve-config.js';

const secretA = OpaqueSecret.fromBytes(randomBytes(32), 'test');
const secretB = OpaqueSecret.fromBytes(randomBytes(32), 'test');

async function call(base: string, path: string, init: RequestInit = {}) {
  const response = await fetch(base + path, init);
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {}
  const body = json as Record<string, unknown> & { error?: { code: string } };
  return { status: response.status, text, json: Object.assign(body ?? {}, { code: body?.error?.code }) };
}

const post = (body: unknown, token?: string): RequestInit => ({
  method: 'POST',
  body: JSON.stringify(body),
  headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
});

describe('opaque tags over HTTP', () => {
  const dataDir = tempDir();
  const store = `sqlite:${dataDir}/shared.db`;
  const config = (overrides: Partial<ServeConfig>): ServeConfig =>
    testServeConfig(tempDir(), { store, workerId: 7, ...overrides });
  const opaqueTag = randomTag();
  const plainTag = randomTag();
  let server: RunningServer;
  let base: string;

  before(async () => {
    server = await startServer(config({ opaqueSecret: secretA }), silentLogger, systemClock);
    base = server.url;
    const made = await call(base, '/v1/tags', post({ tag: opaqueTag, step: 5000, opaque: 'digits:10' }));
    assert.equal(made.status, 201, made.text);
    assert.deepEqual(made.json.opaque, {
      domain: 'digits:10',
      keyCheck: secretA.keyCheck(opaqueTag, { kind: 'digits', digits: 10 }),
      keyMatches: true,
    });
    assert.equal((await call(base, '/v1/tags', post({ tag: plainTag }))).status, 201);
  });

  after(() => server.close());

  it("answers Leaf's route and /v1/segment with distinct 10-digit IDs that decode to 1, 2, 3, …", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 1500; i++) {
      const reply = await call(base, `/api/segment/get/${opaqueTag}`);
      assert.equal(reply.status, 200, reply.text);
      ids.push(reply.text);
    }
    const batch = await call(base, `/v1/segment/${opaqueTag}?count=3000`);
    assert.equal(batch.status, 200, batch.text);
    ids.push(...(batch.json.ids as string[]));
    for (const id of ids) assert.match(id, /^[1-9][0-9]{9}$/);
    assert.equal(new Set(ids).size, ids.length);
    // No visible order: about half of successive pairs increase.
    let up = 0;
    for (let i = 1; i < ids.length; i++) if (BigInt(ids[i] as string) > BigInt(ids[i - 1] as string)) up++;
    assert.ok(Math.abs(up / (ids.length - 1) - 0.5) < 0.05, `${up} of ${ids.length - 1} increase`);
    // One node, one tag: the k-th ID answered is segment ID k (the tag starts at 1).
    for (const k of [1, 2, 1500, 1501, 4500]) {
      const decoded = await call(base, `/v1/opaque/decode/${opaqueTag}?id=${ids[k - 1]}`);
      assert.equal(decoded.status, 200, decoded.text);
      assert.equal(decoded.json.segmentId, String(k));
      assert.equal(decoded.json.domain, 'digits:10');
    }
  });

  it('serves the SDK already permuted: @frond/client falls back from /v1/ranges to /v1/segment lists', async () => {
    const client = createClient({ urls: [base], idType: 'string' });
    try {
      const ids = [await client.nextId(opaqueTag), ...(await client.nextIds(opaqueTag, 2_000))];
      for (const id of ids) assert.match(id, /^[1-9][0-9]{9}$/);
      assert.equal(new Set(ids).size, ids.length);
      let up = 0;
      for (let i = 1; i < ids.length; i++) if (BigInt(ids[i] as string) > BigInt(ids[i - 1] as string)) up++;
      assert.ok(up > ids.length * 0.4 && up < ids.length * 0.6, `${up} of ${ids.length - 1} increase`);
    } finally {
      client.close();
    }
  });

  it('leaves plain tags plain', async () => {
    assert.equal((await call(base, `/api/segment/get/${plainTag}`)).text, '1');
    assert.deepEqual((await call(base, `/v1/segment/${plainTag}?count=2`)).json.ids, ['2', '3']);
    const decoded = await call(base, `/v1/opaque/decode/${plainTag}?id=5`);
    assert.equal(decoded.status, 400);
  });

  it('refuses /v1/ranges of an opaque tag with OPAQUE_NO_RANGES (409)', async () => {
    const reply = await call(base, `/v1/ranges/${opaqueTag}?count=10`);
    assert.equal(reply.status, 409);
    assert.equal(reply.json.code, 'OPAQUE_NO_RANGES');
  });

  it('refuses to change a domain, or to make a plain tag opaque (OPAQUE_TAG_FIXED)', async () => {
    const patch = (tag: string, body: unknown) =>
      call(base, `/v1/tags/${tag}`, { method: 'PATCH', body: JSON.stringify(body) });
    const changed = await patch(opaqueTag, { opaque: 'bits:63' });
    assert.equal(changed.status, 409);
    assert.equal(changed.json.code, 'OPAQUE_TAG_FIXED');
    const plain = await patch(plainTag, { opaque: 'digits:10' });
    assert.equal(plain.status, 409);
    assert.equal(plain.json.code, 'OPAQUE_TAG_FIXED');
    const removed = await patch(opaqueTag, { opaque: null });
    assert.equal(removed.json.code, 'OPAQUE_TAG_FIXED');
    const same = await patch(opaqueTag, { opaque: 'digits:10', step: 6000 });
    assert.equal(same.status, 200, same.text);
    const again = await call(base, '/v1/tags', post({ tag: opaqueTag, opaque: 'bits:40' }));
    assert.equal(again.json.code, 'TAG_EXISTS');
  });

  it('shows the fingerprint on /readyz and in the tag list, never the secret', async () => {
    const ready = await call(base, '/readyz');
    assert.match(ready.text, new RegExp(`fingerprint ${secretA.fingerprint}`));
    const list = await call(base, '/v1/tags');
    assert.equal(list.json.opaqueFingerprint, secretA.fingerprint);
  });

  it('a node without the secret, or with another one, refuses the opaque tag and serves the plain one', async () => {
    for (const [secret, code] of [
      [null, 'OPAQUE_SECRET_MISSING'],
      [secretB, 'OPAQUE_SECRET_MISMATCH'],
    ] as const) {
      const other = await startServer(config({ opaqueSecret: secret }), silentLogger, systemClock);
      try {
        // Leaf's route answers as Leaf's server failed (a 500 in Spring's shape), never an ID.
        const leaf = await call(other.url, `/api/segment/get/${opaqueTag}`);
        assert.equal(leaf.status, 500);
        assert.match(leaf.text, /LeafServerException/);
        for (const path of [`/v1/segment/${opaqueTag}?count=3`, `/v1/ranges/${opaqueTag}?count=3`]) {
          const reply = await call(other.url, path);
          assert.equal(reply.status, 503, `${path}: ${reply.text}`);
          assert.match(reply.text, new RegExp(code));
        }
        assert.equal((await call(other.url, `/api/segment/get/${plainTag}`)).status, 200);
        const list = await call(other.url, '/v1/tags');
        const row = (list.json.tags as { tag: string; opaque: { keyMatches: boolean | null } }[]).find(
          (t) => t.tag === opaqueTag,
        );
        assert.equal(row?.opaque.keyMatches, secret === null ? null : false);
      } finally {
        await other.close();
      }
    }
  });

  it('serves every ID of a bits:20 domain once, then ID_RANGE_EXHAUSTED', async () => {
    const tag = randomTag();
    const made = await call(base, '/v1/tags', post({ tag, step: 200_000, opaque: 'bits:20' }));
    assert.equal(made.status, 201, made.text);
    const seen = new Set<string>();
    const capacity = 2 ** 20 - 1;
    while (seen.size < capacity) {
      const count = Math.min(7_000, capacity - seen.size);
      const reply = await call(base, `/v1/segment/${tag}?count=${count}`);
      assert.equal(reply.status, 200, reply.text);
      for (const id of reply.json.ids as string[]) {
        const n = Number(id);
        assert.ok(n >= 1 && n < 2 ** 20, id);
        seen.add(id);
      }
    }
    assert.equal(seen.size, capacity);
    const past = await call(base, `/v1/segment/${tag}`);
    assert.equal(past.status, 500);
    assert.equal(past.json.code, 'ID_RANGE_EXHAUSTED');
  });
});

describe('opaque decode and the admin token', () => {
  it('refuses the decode endpoint without the admin token', async () => {
    const server = await startServer(
      testServeConfig(tempDir(), { workerId: 8, opaqueSecret: secretA, adminToken: 'sesame' }),
      silentLogger,
      systemClock,
    );
    try {
      const tag = randomTag();
      const made = await call(server.url, '/v1/tags', post({ tag, opaque: 'bits:63' }, 'sesame'));
      assert.equal(made.status, 201, made.text);
      const id = (await call(server.url, `/api/segment/get/${tag}`)).text;
      assert.match(id, /^[0-9]+$/);
      assert.equal((await call(server.url, `/v1/opaque/decode/${tag}?id=${id}`)).status, 401);
      const decoded = await call(server.url, `/v1/opaque/decode/${tag}?id=${id}`, {
        headers: { authorization: 'Bearer sesame' },
      });
      assert.equal(decoded.json.segmentId, '1');
    } finally {
      await server.close();
    }
  });
});

describe('opaque tags declared in the configuration (--opaque-tag, "opaque-tag" in --config)', () => {
  const digits11 = { kind: 'digits', digits: 11 } as const;
  const store = `sqlite:${tempDir()}/declared.db`;
  const config = (overrides: Partial<ServeConfig>): ServeConfig =>
    testServeConfig(tempDir(), { store, workerId: 9, opaqueSecret: secretA, ...overrides });

  it('creates a missing tag opaque, and a second node with the same declaration serves it on without a repeat', async () => {
    const tag = randomTag();
    const ids: string[] = [];
    for (let node = 0; node < 2; node++) {
      const server = await startServer(
        config({ opaqueTags: [{ tag, domain: digits11 }] }),
        silentLogger,
        systemClock,
      );
      try {
        const reply = await call(server.url, `/v1/segment/${tag}?count=500`);
        assert.equal(reply.status, 200, reply.text);
        ids.push(...(reply.json.ids as string[]));
        const row = (await call(server.url, `/v1/tags/${tag}`)).json;
        assert.deepEqual(row.opaque, {
          domain: 'digits:11',
          keyCheck: secretA.keyCheck(tag, digits11),
          keyMatches: true,
        });
      } finally {
        await server.close();
      }
    }
    assert.equal(new Set(ids).size, 1000, 'an opaque ID was handed out twice');
    for (const id of ids) assert.match(id, /^[0-9]{1,11}$/);
    // A permutation, not the segment IDs: 1000 consecutive segment IDs give no run of increases.
    let increases = 0;
    for (let i = 1; i < ids.length; i++)
      if (BigInt(ids[i] as string) > BigInt(ids[i - 1] as string)) increases++;
    assert.ok(increases > 350 && increases < 650, `${increases} of 999 successive pairs increase`);
  });

  it('refuses to start when the store disagrees: a plain tag, another domain, another secret or no secret; and changes no tag', async () => {
    const plain = randomTag();
    const opaque = randomTag();
    const setup = await startServer(config({}), silentLogger, systemClock);
    try {
      assert.equal((await call(setup.url, '/v1/tags', post({ tag: plain }))).status, 201);
      assert.equal((await call(setup.url, '/v1/tags', post({ tag: opaque, opaque: 'bits:53' }))).status, 201);
    } finally {
      await setup.close();
    }
    const cases: [Partial<ServeConfig>, string, RegExp][] = [
      [{ opaqueTags: [{ tag: plain, domain: digits11 }] }, 'OPAQUE_TAG_FIXED', /is a plain tag in the store/],
      [
        { opaqueTags: [{ tag: opaque, domain: digits11 }] },
        'OPAQUE_TAG_FIXED',
        /is opaque bits:53 in the store, not digits:11/,
      ],
      [
        { opaqueTags: [{ tag: opaque, domain: { kind: 'bits', bits: 53 } }], opaqueSecret: secretB },
        'OPAQUE_SECRET_MISMATCH',
        /another secret/,
      ],
      [
        { opaqueTags: [{ tag: randomTag(), domain: digits11 }], opaqueSecret: null },
        'OPAQUE_SECRET_MISSING',
        /no opaque-ID secret/,
      ],
    ];
    for (const [overrides, code, message] of cases) {
      await assert.rejects(
        startServer(config(overrides), silentLogger, systemClock),
        (error: Error & { code?: string }) => {
          assert.equal(error.code, code);
          assert.match(error.message, message);
          return true;
        },
      );
    }
    const check = await startServer(config({}), silentLogger, systemClock);
    try {
      assert.equal(
        (await call(check.url, `/v1/tags/${plain}`)).json.opaque,
        undefined,
        'the plain tag stays plain',
      );
      assert.equal(
        ((await call(check.url, `/v1/tags/${opaque}`)).json.opaque as { domain: string }).domain,
        'bits:53',
      );
    } finally {
      await check.close();
    }
  });
});
