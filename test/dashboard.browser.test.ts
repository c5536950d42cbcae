import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { after, describe, it, type TestContext } from 'node:test';
import { type Browser, chromium, type Page } from 'playwright-core';
import { runFrond, startFrond, tempDir } from './support/frond-process.js';
import { serviceMissing } from './support/service-gate.js';
import { TcpProxy } from './support/tcp-proxy.js';
import { testDatabase } from './support/test-database.js';

/** Debian's Chromium (scripts/install-browser.sh); Playwright's own download cannot work here. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const VERSION = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
/** The window the dashboard is laid out for: cards, chart and the tag table in it at once. */
const WINDOW = { width: 1280, height: 800 };
/** Screenshots go here; DASHBOARD_SCREENSHOT=DIR keeps them somewhere known. */
const SHOTS = process.env.DASHBOARD_SCREENSHOT ?? tempDir('frond-dashboard-');

function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** Opens the dashboard in a 1280×800 window, recording what the page's CSP refused. */
async function openDashboard(browser: Browser, url: string): Promise<{ page: Page; refused: string[] }> {
  const page = await browser.newPage({ viewport: WINDOW });
  const refused: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy/i.test(message.text()))
      refused.push(message.text());
  });
  await page.goto(`${url}/dashboard`);
  return { page, refused };
}

const text = async (page: Page, selector: string) => ((await page.textContent(selector)) ?? '').trim();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const numberIn = async (page: Page, selector: string) =>
  Number((await text(page, selector)).replace(/,/g, ''));

/**
 * Polls until `check` holds, at most `timeoutMs`. Not `page.waitForFunction` with a string: that
 * evaluates it in the page, which the dashboard's CSP (no 'unsafe-eval') rightly refuses.
 */
async function until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) assert.fail(`${what} within ${timeoutMs} ms`);
    await sleep(100);
  }
}

/** Everything fits the window: no scrolling of the page itself, and the table's first row in view. */
async function assertFitsWindow(page: Page, firstRow: string) {
  const layout = (await page.evaluate(`(() => {
    const row = document.querySelector(${JSON.stringify(firstRow)}).getBoundingClientRect();
    const cards = [...document.querySelectorAll('.card')].map((c) => c.getBoundingClientRect().bottom);
    return { scrollH: document.documentElement.scrollHeight, scrollW: document.documentElement.scrollWidth,
      rowBottom: row.bottom, cardsBottom: Math.max(...cards) };
  })()`)) as { scrollH: number; scrollW: number; rowBottom: number; cardsBottom: number };
  assert.ok(layout.scrollH <= WINDOW.height, `page height ${layout.scrollH} px fits ${WINDOW.height}`);
  assert.ok(layout.scrollW <= WINDOW.width, `page width ${layout.scrollW} px fits ${WINDOW.width}`);
  assert.ok(
    layout.cardsBottom < layout.rowBottom && layout.rowBottom <= WINDOW.height,
    JSON.stringify(layout),
  );
}

/** Whether all of the element's text shows: not cut by its box, an ellipsis or a line clamp. */
async function wholeTextShows(page: Page, selector: string): Promise<boolean> {
  return (await page.evaluate(`(() => {
    const el = document.querySelector(${JSON.stringify(selector)});
    const card = el.closest('.card') || el.parentElement;
    return el.scrollWidth <= el.clientWidth && el.scrollHeight <= el.clientHeight
      && card.scrollWidth <= card.clientWidth && card.scrollHeight <= card.clientHeight;
  })()`)) as boolean;
}

/** ISO 8601 in UTC to the second, as the dashboard writes every date. */
const ISO = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z/;
const isoSecond = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** A port on 127.0.0.1 that nothing listens on (free a moment ago). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function screenshot(t: TestContext, page: Page, name: string) {
  const path = join(SHOTS, name);
  await page.screenshot({ path });
  t.diagnostic(`screenshot: ${path}`);
}

describe('dashboard in a real browser', () => {
  const database = testDatabase('postgres');
  after(() => database.drop());

  it('shows the store, readiness, version, uptime, requests, every tag with its buffers and live IDs per second', async (t) => {
    if (!existsSync(CHROMIUM))
      return serviceMissing(t, 'Chromium', `${CHROMIUM} not found; run scripts/install-browser.sh`);
    const dataDir = tempDir();
    assert.equal((await runFrond(['db', 'init', '--data-dir', dataDir])).code, 0);
    assert.equal((await runFrond(['tag', 'add', 'orders', '--step', '1000', '--data-dir', dataDir])).code, 0);
    // Listed at start but never asked for: a tag that is not loaded yet, which is no failure.
    assert.equal((await runFrond(['tag', 'add', 'later', '--step', '1000', '--data-dir', dataDir])).code, 0);
    const node = await startFrond(['--port', '0', '--data-dir', dataDir, '--worker-id', '21']);
    const browser = await launch();
    let traffic = true;
    // Steady traffic while the page is watched: bounded by count and by the flag.
    const load = (async () => {
      for (let i = 0; traffic && i < 20_000; i++) {
        await fetch(`${node.url}/api/segment/get/orders`);
        if (i % 5 === 0) await fetch(`${node.url}/api/snowflake/get/k`);
      }
    })();
    try {
      const { page, refused } = await openDashboard(browser, node.url);
      await until('status live', async () => (await text(page, '#status')) === 'live', 10_000);
      await page.waitForSelector('tr[data-tag="orders"]', { timeout: 10_000 });
      // The rates are taken over the last seconds, so they show once the sampler has two points.
      await until(
        'a rate for orders and requests/s',
        async () =>
          (await numberIn(page, 'tr[data-tag="orders"] td.rate')) > 0 &&
          (await numberIn(page, '#reqRate')) > 0,
        15_000,
      );
      const first = await text(page, '#updated');
      await until('the next update', async () => (await text(page, '#updated')) !== first, 5_000);
      assert.equal(await text(page, '#workerId'), '21');
      assert.equal(await text(page, '#store'), 'sqlite reachable');
      assert.match(await text(page, '#storeSub'), /^sqlite:.*frond\.db$/);
      assert.equal(await text(page, '#ready'), 'ready');
      // The gaps line, from /v1/stats: nothing given up on a fresh store, nothing handed back yet.
      assert.equal(
        await text(page, '#gaps'),
        'IDs given up for good: 0 · handed back at clean stops by this node: 0 · per tag: frond tag gaps TAG',
      );
      assert.equal(await text(page, '#version'), VERSION);
      assert.match(await text(page, '#uptime'), /^\d+(\.\d)? s$/);
      assert.equal(await text(page, '#errRate'), '0');
      assert.match(await text(page, '#latency'), /^[\d.,]+ \/ [\d.,]+ ms$/);
      const segRate = Number((await text(page, '#segRate')).replace(/,/g, ''));
      assert.ok(segRate > 0, `segment IDs/s shown: ${segRate}`);
      const points = await page.getAttribute('#segLine', 'points');
      assert.ok((points ?? '').split(' ').length >= 2, 'the chart has a line');
      // The y axis: labelled ticks from 0 up, and what they count.
      const ticks = (await page.$$eval('#yAxis text', (nodes) =>
        nodes.map((n) => n.textContent),
      )) as string[];
      assert.ok(ticks.includes('0') && ticks.includes('IDs/s') && ticks.length >= 4, ticks.join(' | '));
      const row = await text(page, 'tr[data-tag="orders"] td.state');
      assert.match(row, /^\[\d[\d,]*, \d[\d,]*\)$/, 'a loaded tag shows its range');
      assert.equal(await text(page, 'tr[data-tag="later"] td.state'), 'not loaded');
      assert.equal(await text(page, 'tr[data-tag="later"] td.err'), '', 'not loaded is not an error');
      assert.doesNotMatch(await text(page, 'tr[data-tag="later"]'), /\[0, 0\)|idle/);
      assert.match(await text(page, '#tagSub'), /^1 loaded$/);
      assert.deepEqual(refused, [], 'the page runs under its own CSP');
      await assertFitsWindow(page, 'tr[data-tag="orders"]');
      await screenshot(t, page, 'dashboard-healthy.png');
    } finally {
      traffic = false;
      await load;
      await browser.close();
      await node.stop();
    }
  });

  it('says "showing N of M tags" when /v1/stats gives a tagCount, and greys out when the node is gone', async (t) => {
    if (!existsSync(CHROMIUM))
      return serviceMissing(t, 'Chromium', `${CHROMIUM} not found; run scripts/install-browser.sh`);
    const dataDir = tempDir();
    assert.equal((await runFrond(['db', 'init', '--data-dir', dataDir])).code, 0);
    assert.equal((await runFrond(['tag', 'add', 'orders', '--data-dir', dataDir])).code, 0);
    const node = await startFrond(['--port', '0', '--data-dir', dataDir, '--worker-id', '23']);
    const browser = await launch();
    let stopped = false;
    try {
      const page = await browser.newPage({ viewport: WINDOW });
      // The node's own answer with a tagCount added, as a /v1/stats that lists only part of its tags.
      await page.route('**/v1/stats', async (route) => {
        // Once the node is stopped, the page's poll fails as it would without the route.
        const response = await route.fetch().catch(() => undefined);
        if (response === undefined) return route.abort('connectionrefused');
        // 200 rows (the most /v1/stats lists), to see the table scroll in its box, not the page.
        const stats = (await response.json()) as { tags: { tag: string }[] };
        const [first] = stats.tags;
        const tags = Array.from({ length: 200 }, (_, i) => ({
          ...first,
          tag: `t${String(i).padStart(3, '0')}`,
        }));
        await route.fulfill({ response, json: { ...stats, tags, tagCount: 250 } });
      });
      await page.goto(`${node.url}/dashboard`);
      await until(
        'the tag note',
        async () => (await text(page, '#tagNote')) === 'showing 200 of 250 tags',
        10_000,
      );
      assert.equal(await text(page, '#tagCount'), '250');
      await assertFitsWindow(page, 'tr[data-tag="t000"]');
      await screenshot(t, page, 'dashboard-200-tags.png');
      await node.stop();
      stopped = true;
      await until(
        'cannot reach',
        async () => (await text(page, '#status')).startsWith('cannot reach the node'),
        5_000,
      );
      assert.match((await page.getAttribute('body', 'class')) ?? '', /stale/);
      await screenshot(t, page, 'dashboard-node-gone.png');
    } finally {
      await browser.close();
      if (!stopped) await node.stop();
    }
  });

  it('shows a store that went away: store unreachable, not ready, and the tag error with its message', async (t) => {
    if (!existsSync(CHROMIUM))
      return serviceMissing(t, 'Chromium', `${CHROMIUM} not found; run scripts/install-browser.sh`);
    const db = await database.open(t);
    if (db === undefined) return;
    assert.equal((await runFrond(['db', 'init', '--store', db.url])).code, 0);
    for (const tag of ['orders', 'later'])
      assert.equal((await runFrond(['tag', 'add', tag, '--step', '1000', '--store', db.url])).code, 0);
    // The node reaches PostgreSQL through a proxy, which is then cut: the database went away.
    // (A store that is down at start shows no tag: the node has not read the tag list.)
    const proxy = await TcpProxy.start({ port: 5432 });
    t.after(() => proxy.close());
    const node = await startFrond([
      '--port',
      '0',
      '--data-dir',
      tempDir(),
      '--worker-id',
      '22',
      '--store',
      db.urlVia(proxy.port, 'connect_timeout_ms=1000&query_timeout_ms=1000'),
      '--segment-wait-ms',
      '300',
    ]);
    const browser = await launch();
    try {
      const { page, refused } = await openDashboard(browser, node.url);
      await until(
        'store reachable at first',
        async () => (await text(page, '#store')) === 'postgres reachable',
        10_000,
      );
      proxy.cut();
      // The tag's first request now fails; its buffer keeps the store's error as its last error.
      const answer = await fetch(`${node.url}/v1/segment/orders`);
      assert.equal(answer.status, 503);
      await page.waitForSelector('tr[data-tag="orders"].failing', { timeout: 10_000 });
      await until('not ready', async () => (await text(page, '#ready')) === 'not ready', 5_000);
      assert.equal(await text(page, '#status'), 'live · not ready');
      assert.equal(await text(page, '#store'), 'postgres unreachable');
      assert.equal(await page.getAttribute('#store', 'class'), 'value bad');
      // Why: the failed load's error, less the URL the card shows just above it.
      assert.match(await text(page, '#storeError'), /^STORE_UNAVAILABLE: \S/);
      assert.doesNotMatch(await text(page, '#storeError'), /postgres:\/\//);
      assert.match(await text(page, '#readySub'), /segment: store unreachable and nothing buffered/);
      assert.equal(await text(page, 'tr[data-tag="orders"] td.state'), 'not loaded');
      const error = await text(page, 'tr[data-tag="orders"] td.err');
      // The code and the store's own words, not a bare code.
      assert.match(error, /^[A-Z_]+: \S.{10,}/);
      assert.match(error, /postgres:\/\/postgres@127\.0\.0\.1:\d+\/frond_test_/);
      assert.doesNotMatch(await text(page, 'tr[data-tag="orders"]'), /\[0, 0\)|idle/);
      // A tag never asked for is not loaded, and no failure.
      assert.equal(await text(page, 'tr[data-tag="later"] td.state'), 'not loaded');
      assert.equal(await text(page, 'tr[data-tag="later"] td.err'), '');
      assert.match(await text(page, '#tagSub'), /^0 loaded, 1 failing$/);
      // The 503 is an error answer of the last 10 s (the sampler reads the counts once a second).
      await until('errors/s above 0', async () => (await numberIn(page, '#errRate')) > 0, 5_000);
      // Snowflake mode does not need the store, and says so.
      assert.equal(await text(page, '#clock'), 'ok');
      assert.deepEqual(refused, [], 'the page runs under its own CSP');
      await assertFitsWindow(page, 'tr[data-tag="orders"]');
      await screenshot(t, page, 'dashboard-store-down.png');
    } finally {
      await browser.close();
      await node.stop();
    }
  });

  it('shows IDs as plain digits that copy whole (above 2^53 too), ISO dates, errors/s by code and the whole store URL', async (t) => {
    if (!existsSync(CHROMIUM))
      return serviceMissing(t, 'Chromium', `${CHROMIUM} not found; run scripts/install-browser.sh`);
    // A long path, so that the store's URL is longer than its card is wide.
    const dataDir = tempDir('frond-dashboard-a-data-directory-with-a-long-name-to-make-the-store-url-long-');
    // [tag, first ID, step]: IDs of six digits, and of nineteen (far above 2^53).
    const tags: [string, string, string][] = [
      ['small', '102401', '51200'],
      ['big', '9223372036854000000', '1000'],
    ];
    assert.equal((await runFrond(['db', 'init', '--data-dir', dataDir])).code, 0);
    for (const [tag, start, step] of tags) {
      const added = await runFrond([
        'tag',
        'add',
        tag,
        '--start',
        start,
        '--step',
        step,
        '--data-dir',
        dataDir,
      ]);
      assert.equal(added.code, 0, added.stderr);
    }
    const node = await startFrond(['--port', '0', '--data-dir', dataDir, '--worker-id', '24']);
    const browser = await launch();
    try {
      for (const tag of ['small', 'big'])
        assert.equal((await fetch(`${node.url}/v1/segment/${tag}`)).status, 200);
      const { page, refused } = await openDashboard(browser, node.url);
      await until('status live', async () => (await text(page, '#status')) === 'live', 10_000);
      // Error answers of two codes, while the page watches (errors/s is taken over the last 10 s).
      for (let i = 0; i < 3; i++)
        assert.equal((await fetch(`${node.url}/v1/segment/small?count=0`)).status, 400);
      assert.equal((await fetch(`${node.url}/v1/segment/small?count=x`)).status, 400);
      assert.equal((await fetch(`${node.url}/v1/snowflake/decode/x`)).status, 400);
      await until(
        'errors/s by code',
        async () =>
          /INVALID_COUNT/.test(await text(page, '#errSub')) && /INVALID_ID/.test(await text(page, '#errSub')),
        10_000,
      );
      const stats = (await (await fetch(`${node.url}/v1/stats`)).json()) as {
        startedAt: number;
        store: { description: string };
        requests: { errorsPerSecondByCode: Record<string, number> };
      };
      assert.deepEqual(Object.keys(stats.requests.errorsPerSecondByCode).sort(), [
        'INVALID_COUNT',
        'INVALID_ID',
      ]);
      // The busier code first, each with its rate.
      assert.match(await text(page, '#errSub'), /^INVALID_COUNT [\d.]+\/s, INVALID_ID [\d.]+\/s\b/);
      // IDs as the digits they are: no thousands separators, nothing rounded above 2^53.
      assert.equal(await text(page, 'tr[data-tag="small"] td.state'), '[102401, 153601)');
      assert.equal(
        await text(page, 'tr[data-tag="big"] td.state'),
        '[9223372036854000000, 9223372036854001000)',
      );
      // One click selects an ID whole, ready to copy.
      await page.click('tr[data-tag="big"] td.state .id');
      assert.equal(await page.evaluate('getSelection().toString()'), '9223372036854000000');
      // Dates in ISO 8601, UTC.
      assert.equal(await text(page, '#uptimeSub'), `since ${isoSecond(stats.startedAt)}`);
      assert.match(await text(page, '#updated'), new RegExp(`^updated ${ISO.source}$`));
      // The store's URL whole, not cut by its card.
      assert.ok(stats.store.description.length > 100, stats.store.description);
      assert.equal(await text(page, '#storeSub'), stats.store.description);
      assert.ok(await wholeTextShows(page, '#storeSub'), 'the store URL shows whole');
      assert.ok(await wholeTextShows(page, '#errSub'), 'the error codes show whole');
      assert.deepEqual(refused, [], 'the page runs under its own CSP');
      await assertFitsWindow(page, 'tr[data-tag="big"]');
      await screenshot(t, page, 'dashboard-ids-dates-codes.png');
    } finally {
      await browser.close();
      await node.stop();
    }
  });

  it('says why the store is unreachable and why the node is not ready, with the whole store URL', async (t) => {
    if (!existsSync(CHROMIUM))
      return serviceMissing(t, 'Chromium', `${CHROMIUM} not found; run scripts/install-browser.sh`);
    // PostgreSQL on a loopback port where nothing listens: down from the start.
    const store = `postgres://frond@127.0.0.1:${await closedPort()}/frond_dashboard_database_with_a_long_name?connect_timeout_ms=1000&query_timeout_ms=1000`;
    const node = await startFrond([
      '--port',
      '0',
      '--data-dir',
      tempDir(),
      '--worker-id',
      '25',
      '--store',
      store,
    ]);
    const browser = await launch();
    try {
      const { page, refused } = await openDashboard(browser, node.url);
      await until(
        'store unreachable',
        async () => (await text(page, '#store')) === 'postgres unreachable',
        10_000,
      );
      const answer = await fetch(`${node.url}/v1/segment/orders`);
      assert.equal(answer.status, 503);
      const code = ((await answer.json()) as { error: { code: string } }).error.code;
      const stats = (await (await fetch(`${node.url}/v1/stats`)).json()) as {
        store: { description: string; error: { code: string; message: string } | null };
        readiness: { checks: Record<string, { ok: boolean; detail: string }> };
      };
      // The reason, as /v1/stats gives it: the store's own error.
      assert.match(stats.store.error?.message ?? '', /ECONNREFUSED/);
      assert.match(
        await text(page, '#storeError'),
        /^STORE_UNAVAILABLE: .*connect ECONNREFUSED 127\.0\.0\.1:\d+/,
      );
      assert.ok(await wholeTextShows(page, '#storeError'), 'the reason shows whole');
      assert.equal(await text(page, '#storeSub'), stats.store.description);
      assert.ok(await wholeTextShows(page, '#storeSub'), 'the store URL shows whole');
      // Not ready, and why: the failing check of /readyz in its own words.
      assert.equal(await text(page, '#ready'), 'not ready');
      assert.equal(await text(page, '#readySub'), `segment: ${stats.readiness.checks.segment?.detail}`);
      assert.ok(await wholeTextShows(page, '#readySub'), 'the readiness reason shows whole');
      await until('errors/s by code', async () => (await text(page, '#errSub')).includes(code), 10_000);
      assert.deepEqual(refused, [], 'the page runs under its own CSP');
      await assertFitsWindow(page, '#tags tr');
      await screenshot(t, page, 'dashboard-store-unreachable.png');
    } finally {
      await browser.close();
      await node.stop();
    }
  });
});
