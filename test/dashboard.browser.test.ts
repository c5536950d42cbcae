import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { describe, it } from 'node:test';
import { chromium } from 'playwright-core';
import { runFrond, startFrond, tempDir } from './support/frond-process.js';
import { serviceMissing } from './support/service-gate.js';

/** Debian's Chromium (scripts/install-browser.sh); Playwright's own download cannot work here. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

describe('dashboard in a real browser', () => {
  it('shows every tag with its buffers and live IDs per second, updating every second', async (t) => {
    if (!existsSync(CHROMIUM))
      return serviceMissing(t, 'Chromium', `${CHROMIUM} not found; run scripts/install-browser.sh`);
    const dataDir = tempDir();
    assert.equal((await runFrond(['tag', 'add', 'orders', '--step', '1000', '--data-dir', dataDir])).code, 0);
    const node = await startFrond(['--port', '0', '--data-dir', dataDir, '--worker-id', '21']);
    const browser = await chromium.launch({
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
    let traffic = true;
    // Steady traffic while the page is watched: bounded by count and by the flag.
    const load = (async () => {
      for (let i = 0; traffic && i < 20_000; i++) {
        await fetch(`${node.url}/api/segment/get/orders`);
        if (i % 5 === 0) await fetch(`${node.url}/api/snowflake/get/k`);
      }
    })();
    try {
      const page = await browser.newPage();
      await page.goto(`${node.url}/dashboard`);
      // Page-side checks are strings: the test is compiled without the DOM's types.
      await page.waitForFunction("document.getElementById('status')?.textContent === 'live'", undefined, {
        timeout: 10_000,
      });
      await page.waitForSelector('tr[data-tag="orders"]', { timeout: 10_000 });
      // The rate is taken over the last seconds, so it shows once the sampler has two points.
      await page.waitForFunction(
        "Number(document.querySelector('tr[data-tag=\"orders\"] td.rate')?.textContent?.replace(/,/g, '')) > 0",
        undefined,
        { timeout: 15_000 },
      );
      const first = await page.textContent('#updated');
      await page.waitForFunction(
        `document.getElementById('updated')?.textContent !== ${JSON.stringify(first)}`,
        undefined,
        {
          timeout: 5_000,
        },
      );
      assert.equal(await page.textContent('#workerId'), '21');
      const segRate = Number((await page.textContent('#segRate'))?.replace(/,/g, ''));
      assert.ok(segRate > 0, `segment IDs/s shown: ${segRate}`);
      const points = await page.getAttribute('#segLine', 'points');
      assert.ok((points ?? '').split(' ').length >= 2, 'the chart has a line');
      const row = await page.textContent('tr[data-tag="orders"]');
      assert.match(row ?? '', /\[1, 1,001\)|\[1,001, 2,001\)|\[\d[\d,]*, \d[\d,]*\)/);
      if (process.env.DASHBOARD_SCREENSHOT) {
        mkdirSync('.tmp', { recursive: true });
        await page.screenshot({ path: '.tmp/dashboard.png', fullPage: true });
      }
    } finally {
      traffic = false;
      await load;
      await browser.close();
      await node.stop();
    }
  });
});
