// The edges of formatted tags, from the outside: a period whose `{seq:2}` runs out, the days and
// hours around daylight-saving changes in Europe/Berlin, formats and zones that must be refused by
// the admin API and by `frond tag add`, and the routes a formatted tag answers (Leaf's, as text) or
// refuses (ranges). One real `frond serve` on SQLite whose clock libfaketime moves forward only.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { LIBFAKETIME } from './support/fake-clock.js';
import {
  addFormattedTag,
  assertIncreasingPerNode,
  assertPeriodByClock,
  assertUniqueNumbers,
  type ClockedNode,
  fakeClockAt,
  iso,
  ms,
  type NodeClock,
  postTag,
  type Served,
  sleep,
  take,
} from './support/formatted-tags.js';
import { assertOneLineError, runFrond, startFrond, tempDir } from './support/frond-process.js';
import { httpGet } from './support/http-get.js';
import { randomTag } from './support/random-tag.js';
import { serviceMissing } from './support/service-gate.js';

const SECRET = { FROND_OPAQUE_SECRET: randomBytes(32).toString('hex') };
const LOOP_CEILING_MS = 40_000;

/**
 * Takes numbers from `node` (singles and batches of 7, 5 ms apart: a few thousand numbers, not
 * the tens of thousands a tight loop takes) until its clock reads `until`; every request answered.
 */
async function serveUntil(node: ClockedNode, tag: string, until: number, served: Served[]): Promise<void> {
  const startedAt = Date.now();
  for (let r = 0; r < 10_000 && Date.now() - startedAt < LOOP_CEILING_MS; r++) {
    if (node.clock.now() > until) return;
    const answer = await take(node, 0, tag, r % 2 === 0 ? 1 : 7, served);
    assert.equal(answer.status, 200, `at ${iso(node.clock.now())}: ${answer.body}`);
    await sleep(5);
  }
  assert.fail(`the node's clock did not reach ${iso(until)} in time`);
}

describe('formatted tags at their limits: exhaustion, daylight saving, refusals (SQLite, libfaketime)', () => {
  let node: ClockedNode;
  let clock: NodeClock;
  let store: string;
  let ready = false;

  before(async () => {
    if (!existsSync(LIBFAKETIME)) return;
    clock = fakeClockAt(ms('2026-03-29T21:55:00Z'));
    store = `sqlite:${join(tempDir('frond-formats-'), 'orders.db')}`;
    const init = await runFrond(['db', 'init', '--store', store]);
    assert.equal(init.code, 0, init.stderr);
    const args = ['--port', '0', '--data-dir', tempDir('frond-node-'), '--no-snowflake', '--store', store];
    node = { process: await startFrond(args, { env: { ...clock.env, ...SECRET } }), clock };
    ready = true;
  });
  after(() => node?.process.stop('SIGKILL'));

  // The tests run in this order and move the clock forward only: March, October, December.
  const skipUnlessReady = (t: TestContext) => {
    if (ready) return false;
    serviceMissing(t, 'libfaketime', `${LIBFAKETIME} is missing; run scripts/services.sh`);
    return true;
  };

  it('refuses bad formats, zones and format with opaque: 400 with a message on POST /v1/tags, exit 2 and one line from frond tag add', async (t) => {
    if (skipUnlessReady(t)) return;
    const cases: { name: string; format: string; timeZone?: string; opaque?: string; message: RegExp }[] = [
      { name: 'no {seq}', format: 'ORD-{yyyy}{MM}{dd}', message: /\{seq/ },
      { name: 'two {seq}', format: '{yyyy}-{seq:4}-{seq}', message: /\{seq/ },
      { name: 'an unknown token', format: '{yyyy}{MM}{dd}{ss}{seq:4}', message: /\{ss\}/ },
      { name: '{dd} without {MM}', format: '{yyyy}{dd}-{seq:4}', message: /\{MM\}/ },
      { name: 'a number of 20 digits', format: '{yyyy}{MM}{dd}{HH}{seq:10}', message: /20 digits/ },
      {
        name: 'an unknown zone',
        format: '{yyyy}{seq:6}',
        timeZone: 'Mars/Olympus',
        message: /Mars\/Olympus/,
      },
      { name: 'format and opaque', format: '{yyyy}{seq:6}', opaque: 'bits:40', message: /opaque/ },
    ];
    const names: string[] = [];
    for (const bad of cases) {
      const tag = randomTag('bad');
      names.push(tag);
      const body: Record<string, unknown> = { tag, format: bad.format, timeZone: bad.timeZone ?? 'UTC' };
      if (bad.opaque !== undefined) body.opaque = bad.opaque;
      const refused = await postTag(node.process.url, body);
      assert.equal(refused.status, 400, `${bad.name}: ${refused.text}`);
      assert.match(refused.message ?? '', bad.message, `${bad.name}: ${refused.text}`);
    }
    const cli = await Promise.all(
      cases.map((bad) => {
        const tag = randomTag('bad');
        names.push(tag);
        const args = ['tag', 'add', tag, '--format', bad.format, '--time-zone', bad.timeZone ?? 'UTC'];
        if (bad.opaque !== undefined) args.push('--opaque', bad.opaque);
        return runFrond([...args, '--store', store], { env: SECRET });
      }),
    );
    cases.forEach((bad, i) => {
      const result = cli[i] as { code: number | null; stderr: string };
      assertOneLineError(result, 2, new RegExp(`^frond: .*${bad.message.source}`));
    });
    // Nothing was created under any of those names.
    const listed = await fetch(`${node.process.url}/v1/tags`).then((response) => response.text());
    for (const tag of names) assert.ok(!listed.includes(tag), `${tag} was created: ${listed.slice(0, 300)}`);
  });

  it("answers Leaf's route with the number as text and /v1/segment with JSON strings; refuses /v1/ranges (409 FORMAT_NO_RANGES)", async (t) => {
    if (skipUnlessReady(t)) return;
    const tag = randomTag('numeric');
    await addFormattedTag(node.process.url, tag, '{yy}{MM}{dd}{seq:8}', 'UTC');
    const leaf = await httpGet(`${node.process.url}/api/segment/get/${tag}`);
    assert.equal(leaf.status, 200, leaf.body);
    assert.equal(leaf.body, '26032900000001');
    const served: Served[] = [];
    const list = await take(node, 0, tag, 3, served);
    assert.equal(list.status, 200, list.body);
    assert.deepEqual(JSON.parse(list.body), { ids: ['26032900000002', '26032900000003', '26032900000004'] });
    const ranges = await fetch(`${node.process.url}/v1/ranges/${tag}?count=10`);
    const text = await ranges.text();
    assert.equal(ranges.status, 409, text);
    assert.equal((JSON.parse(text) as { error: { code: string } }).error.code, 'FORMAT_NO_RANGES');
  });

  it('a daily tag in Europe/Berlin across the end of the spring-forward day (23 hours long): the next day from 000001 at local midnight', async (t) => {
    if (skipUnlessReady(t)) return;
    const tag = randomTag('berlin-day');
    await addFormattedTag(node.process.url, tag, 'B{yyyy}{MM}{dd}-{seq:6}', 'Europe/Berlin', 20);
    // 2026-03-29 began at 23:00 UTC the day before (CET) and ends at 22:00 UTC (CEST): 23 hours.
    const midnight = ms('2026-03-30T00:00:00+02:00');
    clock.at(midnight - 10_000);
    const served: Served[] = [];
    await serveUntil(node, tag, midnight + 2_000, served);
    const shape = /^B(20260329|20260330)-([0-9]{6})$/;
    for (const one of served) assert.match(one.id, shape);
    const dayOf = (id: string) => shape.exec(id)?.[1] ?? id;
    const seqOf = (id: string) => BigInt(shape.exec(id)?.[2] ?? '-1');
    assertUniqueNumbers(served);
    assertPeriodByClock(served, midnight, dayOf, '20260329', '20260330');
    assertIncreasingPerNode(served, dayOf, seqOf);
    assert.equal(served.find((one) => dayOf(one.id) === '20260330')?.id, 'B20260330-000001');
  });

  it('an hourly tag in Europe/Berlin across the fall-back (02:00-03:00 twice): one counter for both, numbers go on', async (t) => {
    if (skipUnlessReady(t)) return;
    const tag = randomTag('berlin-hour');
    await addFormattedTag(node.process.url, tag, '{yyyy}{MM}{dd}{HH}{seq:6}', 'Europe/Berlin', 20);
    // At 01:00 UTC, 03:00 CEST becomes 02:00 CET: the local hour 02 again, the same key.
    const fallBack = ms('2026-10-25T01:00:00Z');
    clock.at(fallBack - 10_000);
    const served: Served[] = [];
    await serveUntil(node, tag, fallBack + 10_000, served);
    const shape = /^2026102502([0-9]{6})$/;
    for (const one of served) assert.match(one.id, shape);
    assertUniqueNumbers(served);
    assertIncreasingPerNode(
      served,
      () => '2026102502',
      (id) => BigInt(shape.exec(id)?.[1] ?? '-1'),
    );
    assert.equal(served[0]?.id, '2026102502000001');
    assert.ok(
      served.some((one) => one.sentAt > fallBack + 50) &&
        served.some((one) => one.receivedAt < fallBack - 50),
      'numbers on both sides of the fall-back',
    );
  });

  it('a period that runs out of {seq:2} answers 503 ID_RANGE_EXHAUSTED with Retry-After, never a wider number, and the next period serves from 01', async (t) => {
    if (skipUnlessReady(t)) return;
    const tag = randomTag('tiny');
    await addFormattedTag(node.process.url, tag, 'D{yyyy}{MM}{dd}-{seq:2}', 'UTC', 1000);
    const midnight = ms('2026-12-16T00:00:00Z');
    clock.at(midnight - 30_000);
    const v1 = (count: number) => httpGet(`${node.process.url}/v1/segment/${tag}?count=${count}`);
    const ids: string[] = [];
    // 90 in batches of 10, then one at a time up to 99.
    for (let i = 0; i < 9; i++) {
      const answer = await v1(10);
      assert.equal(answer.status, 200, answer.body);
      ids.push(...(JSON.parse(answer.body) as { ids: string[] }).ids);
    }
    for (let i = 0; i < 9; i++) {
      const answer = await v1(1);
      assert.equal(answer.status, 200, answer.body);
      ids.push(...(JSON.parse(answer.body) as { ids: string[] }).ids);
    }
    assert.deepEqual(
      ids,
      Array.from({ length: 99 }, (_, i) => `D20261215-${String(i + 1).padStart(2, '0')}`),
    );
    for (const count of [1, 5]) {
      const askedAt = clock.now();
      const refused = await v1(count);
      assert.equal(refused.status, 503, refused.body);
      assert.equal(
        (JSON.parse(refused.body) as { error: { code: string } }).error.code,
        'ID_RANGE_EXHAUSTED',
      );
      // Retry-After: the seconds until the next period begins (about 30 here).
      const retryAfter = Number(refused.retryAfter);
      const left = (midnight - askedAt) / 1000;
      assert.ok(
        Number.isInteger(retryAfter) &&
          retryAfter >= Math.floor(left) - 1 &&
          retryAfter <= Math.ceil(left) + 1,
        `Retry-After ${refused.retryAfter}, ${left} s left in the period`,
      );
    }
    const leaf = await httpGet(`${node.process.url}/api/segment/get/${tag}`);
    assert.notEqual(leaf.status, 200, `Leaf's route served ${leaf.body} past the period's last number`);
    assert.doesNotMatch(leaf.body, /^D[0-9]{8}-[0-9]{3,}$/);

    clock.at(midnight + 1_000);
    const next = await v1(3);
    assert.equal(next.status, 200, next.body);
    assert.deepEqual(JSON.parse(next.body), { ids: ['D20261216-01', 'D20261216-02', 'D20261216-03'] });
  });

  it('stops the node cleanly', async (t) => {
    if (skipUnlessReady(t)) return;
    assert.equal(await node.process.stop('SIGTERM'), 0);
  });
});
