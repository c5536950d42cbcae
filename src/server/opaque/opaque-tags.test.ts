import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { ManualClock } from '../../../test/support/manual-clock.js';
import { MemoryStore } from '../../../test/support/memory-store.js';
import { randomTag } from '../../../test/support/random-tag.js';
import { silentLogger } from '../../core/logger.js';
import { OpaqueCodec, type OpaqueDomain, parseDomain } from '../../core/opaque-codec.js';
import { DEFAULT_SEGMENT_ALLOCATOR_OPTIONS, SegmentAllocator } from '../../core/segment-allocator.js';
import { OpaqueSecret } from './opaque-keys.js';
import { encodeInChunks, OPAQUE_CHUNK, OpaqueTags } from './opaque-tags.js';
import { type IssuedId, TagIssuer } from './tag-issuer.js';

const SECRET = OpaqueSecret.fromBytes(randomBytes(32), 'test');

async function opaqueNode(domain: OpaqueDomain) {
  const store = new MemoryStore();
  const clock = new ManualClock();
  const allocator = new SegmentAllocator(store, clock, silentLogger, DEFAULT_SEGMENT_ALLOCATOR_OPTIONS);
  const opaque = new OpaqueTags(allocator, SECRET, () => clock.now());
  const tag = randomTag('opaque');
  const text = domain.kind === 'bits' ? `bits:${domain.bits}` : `digits:${domain.digits}`;
  await store.addTag(
    { tag, step: 100_000, start: 1n },
    { domain: text, keyCheck: SECRET.keyCheck(tag, domain) },
  );
  await opaque.preload();
  return { tag, issuer: new TagIssuer(allocator, opaque) };
}

/** Segment IDs 1..count encoded one at a time on FF1's bigint reading: what the batches must equal. */
function oneByOne(tag: string, domain: OpaqueDomain, count: number): Set<string> {
  const codec = new OpaqueCodec(SECRET.cipherFor(tag, domain), domain, { reference: true });
  const out = new Set<string>();
  for (let id = 1n; id <= BigInt(count); id++) out.add(String(codec.encode(id)));
  return out;
}

describe('OpaqueTags: batches encoded in chunks', () => {
  for (const text of ['digits:11', 'bits:63']) {
    it(`two concurrent batches of 6,000 on one ${text} tag: all distinct, the one-by-one encodings of segment IDs 1..12,000`, async () => {
      const domain = parseDomain(text);
      const { tag, issuer } = await opaqueNode(domain);
      // Two large batches at once, each refilled in chunks with turns of the event loop between
      // them (and single IDs taken meanwhile): their chunks interleave on one codec.
      const singles: Promise<IssuedId>[] = [];
      const both = Promise.all([issuer.many(tag, 6_000), issuer.many(tag, 6_000)]);
      for (let i = 0; i < 20; i++) singles.push(issuer.one(tag));
      const [first, second] = await both;
      const served = [...first, ...second, ...(await Promise.all(singles))].map(String);
      assert.equal(served.length, 12_020);
      assert.equal(new Set(served).size, served.length, 'no opaque ID twice');
      // The queue is served in order from segment ID 1 (one segment of 100,000): the 12,020 IDs
      // served are exactly those of segment IDs 1..12,020, whichever request got which.
      const expected = oneByOne(tag, domain, 12_020);
      assert.deepEqual(
        served.filter((id) => !expected.has(id)),
        [],
        'every ID is the one-by-one encoding of one of segment IDs 1..12,020',
      );
    });
  }

  it('encodes in chunks exactly what one call encodes, with two runs interleaved on one codec', async () => {
    for (const text of ['digits:6', 'digits:11', 'digits:18', 'bits:20', 'bits:53', 'bits:63']) {
      const domain = parseDomain(text);
      const codec = new OpaqueCodec(SECRET.cipherFor('chunks', domain), domain);
      const low = Array.from({ length: 3 * OPAQUE_CHUNK + 7 }, (_, i) => i + 1);
      const high = Array.from({ length: 2 * OPAQUE_CHUNK + 1 }, (_, i) => 100_000 + i);
      const [a, b] = await Promise.all([encodeInChunks(codec, low), encodeInChunks(codec, high, 100)]);
      assert.deepEqual(a.map(String), codec.encodeBatch(low).map(String), text);
      assert.deepEqual(
        b.map(String),
        high.map((id) => String(codec.encode(BigInt(id)))),
        text,
      );
      assert.equal(new Set([...a, ...b].map(String)).size, low.length + high.length, text);
    }
  });
});
