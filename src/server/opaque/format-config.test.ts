import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemoryStore } from '../../../test/support/memory-store.js';
import { randomTag } from '../../../test/support/random-tag.js';
import { isFrondError } from '../../core/errors.js';
import { applyDeclaredFormatTags, parseDeclaredFormatTag } from './format-config.js';

describe('--format-tag TAG=FORMAT[@ZONE]', () => {
  it('reads the tag to the first =, the zone after the last @ when it is a zone name, UTC otherwise', () => {
    assert.deepEqual(parseDeclaredFormatTag('order-no={yyyy}{MM}{dd}{seq:6}@asia/shanghai', '--format-tag'), {
      tag: 'order-no',
      setting: { format: '{yyyy}{MM}{dd}{seq:6}', timeZone: 'Asia/Shanghai' },
    });
    assert.deepEqual(parseDeclaredFormatTag('mail=A@B-{seq}', '--format-tag').setting, {
      format: 'A@B-{seq}',
      timeZone: 'UTC',
    });
    for (const bad of ['{seq}', 'x={yyyy}', 'x={seq}@Mars/Olympus', 'x={seq:4}'.replace('}', '')])
      assert.throws(
        () => parseDeclaredFormatTag(bad, '--format-tag'),
        (error) => isFrondError(error, 'INVALID_CONFIG') && error.message.startsWith('--format-tag '),
        bad,
      );
  });

  it('creates a missing tag, leaves one with the same format, refuses another kind or format', async () => {
    const store = new MemoryStore();
    const tag = randomTag('declared');
    const declared = [parseDeclaredFormatTag(`${tag}=D{yyyy}{MM}{dd}-{seq:5}@Europe/Berlin`, '--format-tag')];
    await applyDeclaredFormatTags(store, declared);
    assert.deepEqual((await store.tag(tag))?.format, {
      format: 'D{yyyy}{MM}{dd}-{seq:5}',
      timeZone: 'Europe/Berlin',
    });
    await applyDeclaredFormatTags(store, declared);
    const other = [parseDeclaredFormatTag(`${tag}=D{yyyy}-{seq:5}`, '--format-tag')];
    await assert.rejects(applyDeclaredFormatTags(store, other), (error) =>
      isFrondError(error, 'FORMAT_TAG_FIXED'),
    );
    const plain = randomTag('plain');
    await store.addTag({ tag: plain, step: 10, start: 1n });
    await assert.rejects(
      applyDeclaredFormatTags(store, [parseDeclaredFormatTag(`${plain}=P-{seq}`, '--format-tag')]),
      (error) => isFrondError(error, 'FORMAT_TAG_FIXED') && /plain/.test(error.message),
    );
  });
});
