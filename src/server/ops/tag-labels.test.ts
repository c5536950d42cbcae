import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { MemoryStore } from '../../../test/support/memory-store.js';
import { randomTag } from '../../../test/support/random-tag.js';
import { systemClock } from '../../core/clock.js';
import { silentLogger } from '../../core/logger.js';
import { SegmentAllocator } from '../../core/segment-allocator.js';
import { StatsSampler } from './stats-sampler.js';

async function node(t: TestContext, tags: number, metricsTags: number) {
  const store = new MemoryStore();
  const prefix = randomTag('s');
  const names = Array.from({ length: tags }, (_, i) => `${prefix}-${String(i).padStart(3, '0')}`);
  for (const tag of names) await store.addTag({ tag, start: 1n, step: 1000 });
  const allocator = new SegmentAllocator(store, systemClock, silentLogger);
  await allocator.start();
  t.after(() => allocator.close());
  const sampler = new StatsSampler(systemClock, { metricsTags });
  sampler.attach(allocator, undefined);
  const take = async (tag: string, count: number) => {
    for (let i = 0; i < count; i++) await allocator.next(tag);
  };
  return { allocator, sampler, names, take };
}

/** What /metrics would show for frond_ids_issued_total{mode="segment"}: label → value. */
function issuedSeries(sampler: StatsSampler): Map<string, number> {
  const metrics = sampler.tagMetrics();
  const out = new Map(metrics.labelled.map((tag) => [tag.tag, tag.issued] as [string, number]));
  if (metrics.other) out.set('(other)', metrics.other.issued);
  return out;
}

describe('StatsSampler labels', () => {
  it('labels every tag with its full counts while they fit, and adds none up', async (t) => {
    const { sampler, names, take } = await node(t, 4, 10);
    sampler.sample();
    await take(names[1] as string, 7);
    sampler.sample();
    const series = issuedSeries(sampler);
    assert.equal(series.size, 4);
    assert.equal(series.get(names[1] as string), 7);
    assert.equal(series.has('(other)'), false);
    assert.equal(sampler.tagMetrics().tagCount, 4);
  });

  it('with more tags than labels: at most N labels, busy tags first, and every series only goes up while labels move', async (t) => {
    const { sampler, names, take } = await node(t, 30, 3);
    sampler.sample();
    let served = 0;
    let previous = new Map<string, number>();
    // 130 one-second samples; the busy tags change every 40, so labels move at the 60 s re-picks.
    for (let second = 0; second < 130; second++) {
      const phase = Math.floor(second / 40);
      for (let k = 0; k < 4; k++) {
        const tag = names[phase * 5 + k] as string;
        await take(tag, k + 1);
        served += k + 1;
      }
      sampler.sample();
      const series = issuedSeries(sampler);
      assert.ok(series.size <= 4, `${series.size} series`);
      const total = [...series.values()].reduce((sum, value) => sum + value, 0);
      assert.equal(total, served, `second ${second}: the series add up to ${total}, not ${served}`);
      for (const [label, value] of series) {
        const before = previous.get(label);
        // A label that is new, or came back, starts again from 0; one that stays never goes down.
        if (before !== undefined) assert.ok(value >= before, `${label} went from ${before} to ${value}`);
      }
      previous = series;
    }
    // The last re-pick (the 120th sample, second 118) gave the labels to phase 2's three busiest;
    // phase 3's tags wait for the next one, in (other).
    const labelled = sampler.tagMetrics().labelled.map((tag) => tag.tag);
    assert.deepEqual(labelled.sort(), [names[11], names[12], names[13]].sort());
  });

  it('/v1/stats lists the busiest, a named tag, and tagCount', async (t) => {
    const { sampler, names, take } = await node(t, 300, 5);
    sampler.sample();
    await take(names[250] as string, 50);
    await take(names[10] as string, 20);
    sampler.sample();
    const all = sampler.snapshot();
    assert.equal(all.tagCount, 300);
    assert.equal(all.tags.length, 200);
    const top = sampler.snapshot({ limit: 2 });
    assert.deepEqual(
      top.tags.map((tag) => tag.tag),
      [names[10], names[250]],
    );
    assert.deepEqual(
      sampler.snapshot({ tags: [names[3] as string, 'no-such-tag'] }).tags.map((tag) => tag.tag),
      [names[3]],
    );
  });
});
