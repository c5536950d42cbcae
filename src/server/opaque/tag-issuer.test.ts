import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { ManualClock } from '../../../test/support/manual-clock.js';
import { MemoryStore } from '../../../test/support/memory-store.js';
import { isFrondError } from '../../core/errors.js';
import { silentLogger } from '../../core/logger.js';
import { parseDomain } from '../../core/opaque-codec.js';
import { DEFAULT_SEGMENT_ALLOCATOR_OPTIONS, SegmentAllocator } from '../../core/segment-allocator.js';
import { OpaqueSecret } from './opaque-keys.js';
import { OpaqueTags } from './opaque-tags.js';
import { TagIssuer } from './tag-issuer.js';

function node(store: MemoryStore, clock = new ManualClock()) {
  const allocator = new SegmentAllocator(store, clock, silentLogger, DEFAULT_SEGMENT_ALLOCATOR_OPTIONS);
  const secret = OpaqueSecret.fromBytes(SECRET, 'test');
  const opaque = new OpaqueTags(allocator, secret, () => clock.now());
  return { allocator, opaque, issuer: new TagIssuer(allocator, opaque), clock, secret };
}

const SECRET = randomBytes(32);
const DOMAIN = parseDomain('bits:20');

describe('TagIssuer: plain or opaque, from the kind of every grant', () => {
  it('serves a tag it took for plain as opaque once the grant says so, with no plain ID on the way', async () => {
    const store = new MemoryStore();
    const { issuer, opaque, secret } = node(store);
    await store.addTag(
      { tag: 't', step: 100, start: 1n },
      { domain: 'bits:20', keyCheck: secret.keyCheck('t', DOMAIN) },
    );
    assert.equal(opaque.modeOf('t'), undefined, 'nothing known: the tag goes the plain way first');
    assert.equal(issuer.tryOne('t'), undefined);
    const ids = [await issuer.one('t'), ...(await issuer.many('t', 50))].map(BigInt);
    assert.equal(new Set(ids).size, ids.length);
    // Opaque IDs of segment IDs 1..51 are spread over 2^20: plain ones would be 1..51.
    assert.ok(ids.filter((id) => id <= 51n).length < 3, ids.join(','));
    await assert.rejects(issuer.ranges('t', 5), (error) => isFrondError(error, 'OPAQUE_NO_RANGES'));
  });

  it('refuses a tag it knows as opaque whose grants come back plain (its options row deleted), until the row is back', async () => {
    const store = new MemoryStore();
    const { issuer, opaque, secret, clock } = node(store);
    const setting = { domain: 'bits:20', keyCheck: secret.keyCheck('t', DOMAIN) };
    await store.addTag({ tag: 't', step: 10, start: 1n }, setting);
    await opaque.preload();
    const served = new Set((await issuer.many('t', 15)).map(String));
    // By hand: the options row deleted, so the store grants the tag as plain. What the node encoded
    // ahead from opaque grants is still served; the first plain grant is refused.
    store.opaque.delete('t');
    let refused: unknown;
    for (let round = 0; round < 5 && refused === undefined; round++) {
      try {
        for (const id of await issuer.many('t', 500)) {
          assert.ok(!served.has(String(id)));
          served.add(String(id));
        }
      } catch (error) {
        refused = error;
      }
    }
    assert.ok(
      isFrondError(refused, 'INVALID_CONFIG') && /frond_tag_options/.test(refused.message),
      String(refused),
    );
    for (let round = 0; round < 3; round++) {
      await clock.advance(1_500);
      await assert.rejects(issuer.many('t', 20), (error) => isFrondError(error, 'INVALID_CONFIG'));
    }
    store.opaque.set('t', setting);
    await clock.advance(1_500);
    const after = (await issuer.many('t', 20)).map(String);
    assert.ok(
      after.every((id) => !served.has(id)),
      'no opaque ID twice',
    );
  });

  it('an unknown tag costs no store read per request: the allocator remembers it is missing', async () => {
    const store = new MemoryStore();
    let reads = 0;
    const read = store.tag.bind(store);
    store.tag = (tag) => {
      reads++;
      return read(tag);
    };
    const { issuer } = node(store);
    for (let i = 0; i < 50; i++)
      await assert.rejects(issuer.one('ghost'), (error) => isFrondError(error, 'TAG_NOT_FOUND'));
    assert.equal(reads, 0);
    assert.equal(store.calls.length, 1, 'one advance found it missing; the rest were answered from memory');
  });
});
