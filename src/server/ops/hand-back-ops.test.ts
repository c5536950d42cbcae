import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { ManualClock } from '../../../test/support/manual-clock.js';
import { MemoryStore } from '../../../test/support/memory-store.js';
import { randomTag } from '../../../test/support/random-tag.js';
import { isFrondError } from '../../core/errors.js';
import { silentLogger } from '../../core/logger.js';
import { parseDomain } from '../../core/opaque-codec.js';
import { DEFAULT_SEGMENT_ALLOCATOR_OPTIONS, SegmentAllocator } from '../../core/segment-allocator.js';
import { mergeStats } from '../cluster/cluster-stats.js';
import { OpaqueSecret } from '../opaque/opaque-keys.js';
import { OpaqueTags } from '../opaque/opaque-tags.js';
import { TagIssuer } from '../opaque/tag-issuer.js';
import { GapTotals } from './gap-totals.js';
import { Metrics } from './metrics.js';
import { StatsSampler } from './stats-sampler.js';
import type { StatsSnapshot } from './stats-snapshot.js';

const SECRET = OpaqueSecret.fromBytes(randomBytes(32), 'test');

describe('an opaque tag at a clean stop', () => {
  it('gives its look-ahead back with the buffer: the next grant starts right after the last ID served', async () => {
    const store = new MemoryStore();
    const clock = new ManualClock();
    const allocator = new SegmentAllocator(store, clock, silentLogger, DEFAULT_SEGMENT_ALLOCATOR_OPTIONS);
    const opaque = new OpaqueTags(allocator, SECRET, () => clock.now());
    const tag = randomTag('opaque');
    const domain = parseDomain('digits:12');
    await store.addTag(
      { tag, step: 5_000, start: 1n },
      { domain: 'digits:12', keyCheck: SECRET.keyCheck(tag, domain) },
    );
    await opaque.preload();
    const issuer = new TagIssuer(allocator, opaque);
    // 10 served: a refill took 1,024 segment IDs (OPAQUE_BATCH) and encoded them ahead.
    for (let i = 0; i < 10; i++) await issuer.one(tag);
    const ahead = await opaque.lookAhead();
    const runs = ahead.get(tag);
    assert.ok(runs !== undefined && runs.length > 0, 'the look-ahead is held');
    assert.ok(runs.every((run) => run.reason === 'opaque_look_ahead'));
    const held = runs.reduce((sum, run) => sum + (run.end - run.start), 0n);
    assert.ok(held >= 1000n, `at least the rest of one batch: ${held}`);
    // The tag serves nothing more from its queue, and takes nothing more from the allocator.
    await assert.rejects(issuer.one(tag), (error) => isFrondError(error, 'SEGMENT_UNAVAILABLE'));
    const summary = await allocator.handBackAll({ extra: ahead, timeoutMs: 1_000 });
    assert.deepEqual(summary.failed, []);
    assert.deepEqual(summary.gaps, [], 'one node: everything went back');
    // 10 segment IDs served: the row goes back to 11.
    assert.equal((await store.tag(tag))?.maxId, 11n);
  });
});

describe('metrics and stats of gaps', () => {
  it('counts IDs given up by reason and handed back, and reads frond_gap_ids from the store at scrape', async () => {
    const clock = new ManualClock();
    const stats = new StatsSampler(clock);
    const metrics = new Metrics(stats);
    const store = new MemoryStore();
    const tag = randomTag();
    await store.addTag({ tag, step: 100, start: 1n });
    await store.primitive.recordGaps([
      { tag, start: 1n, end: 101n, reason: 'crash', node: 'n', at: 0 },
      { tag, start: 200n, end: 250n, reason: 'unsafe_hand_back', node: 'n', at: 0 },
    ]);
    const gaps = new GapTotals(store, clock);
    metrics.attachGapTotals(gaps);
    metrics.idsGivenUp(tag, 'crash', 100n);
    metrics.idsGivenUp(tag, 'range_unused', 7n);
    metrics.idsHandedBack(tag, 900n);
    const text = await metrics.text();
    assert.match(text, /^frond_ids_given_up_total\{reason="crash"\} 100$/m);
    assert.match(text, /^frond_ids_given_up_total\{reason="range_unused"\} 7$/m);
    assert.match(text, /^frond_ids_given_up_total\{reason="fence"\} 0$/m, 'every reason, from 0');
    assert.match(text, /^frond_ids_handed_back_total 900$/m);
    assert.match(text, /^frond_gap_ids\{reason="crash"\} 100$/m);
    assert.match(text, /^frond_gap_ids\{reason="unsafe_hand_back"\} 50$/m);
    assert.match(text, /^frond_gap_ids\{reason="opaque_look_ahead"\} 0$/m);
    assert.deepEqual(metrics.gapCounts(), {
      givenUp: { crash: '100', unsafe_hand_back: '0', opaque_look_ahead: '0', range_unused: '7', fence: '0' },
      handedBack: '900',
    });
  });

  it('--workers: handedBack and givenUp add up; the store totals are the highest one process read, not a sum', () => {
    const zero = { ranges: 0, ids: '0' };
    const snapshot = (handedBack: string, crashIds: string, ranges: number): StatsSnapshot =>
      ({
        at: 1,
        version: 'v',
        nodeVersion: 'n',
        startedAt: 0,
        uptimeSeconds: 1,
        store: null,
        requests: {
          windowSeconds: 0,
          perSecond: 0,
          errorsPerSecond: 0,
          errorsPerSecondByCode: {},
          latencyMs: null,
        },
        tagCount: 0,
        tags: [],
        history: [],
        snowflake: null,
        gaps: {
          crash: { ranges, ids: crashIds },
          unsafe_hand_back: zero,
          opaque_look_ahead: zero,
          range_unused: zero,
          fence: zero,
        },
        handedBack,
        givenUp: {
          crash: crashIds,
          unsafe_hand_back: '0',
          opaque_look_ahead: '0',
          range_unused: '0',
          fence: '0',
        },
      }) as StatsSnapshot;
    const merged = mergeStats([snapshot('100', '3000', 3), snapshot('9007199254740993', '2000', 2)]);
    assert.equal(merged.handedBack, '9007199254741093');
    assert.deepEqual(merged.gaps?.crash, { ranges: 3, ids: '3000' });
    assert.equal(merged.givenUp?.crash, '5000');
    assert.equal(merged.processes, 2);
    assert.equal(mergeStats([]).gaps, undefined);
  });
});
