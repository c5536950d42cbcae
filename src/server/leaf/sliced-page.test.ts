import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CachedPage, PAGE_TTL_MS, PAGE_TTL_PER_BUILD } from './sliced-page.js';

describe('CachedPage', () => {
  function page(buildMs: number) {
    let now = 1_000_000;
    let builds = 0;
    const cached = new CachedPage(
      async () => {
        builds++;
        now += buildMs;
        return Buffer.from(`build ${builds}`);
      },
      () => now,
    );
    return {
      get: async () => (await cached.get()).toString(),
      wait: (ms: number) => {
        now += ms;
      },
      builds: () => builds,
    };
  }

  it('answers a cheap page again for 1 s, then builds it anew', async () => {
    const p = page(5);
    assert.equal(await p.get(), 'build 1');
    p.wait(PAGE_TTL_MS - 1);
    assert.equal(await p.get(), 'build 1');
    p.wait(1);
    assert.equal(await p.get(), 'build 2');
  });

  it('keeps a page that was slow to build ten times as long as its build took, so a poller cannot keep the node building it', async () => {
    const p = page(600);
    assert.equal(await p.get(), 'build 1');
    // A poller every second for 5.9 s: still the first build (1 s alone would rebuild five times).
    for (let i = 0; i < 5; i++) {
      p.wait(1_000);
      assert.equal(await p.get(), 'build 1');
    }
    p.wait(600 * PAGE_TTL_PER_BUILD - 5_000);
    assert.equal(await p.get(), 'build 2');
    assert.equal(p.builds(), 2);
  });
});
