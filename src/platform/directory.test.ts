import assert from 'node:assert/strict';
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { isFrondError } from '../core/errors.js';
import { makeDirectory } from './directory.js';

describe('makeDirectory', () => {
  it('creates missing parents and leaves an existing directory alone', () => {
    const root = mkdtempSync(join(tmpdir(), 'frond-dir-'));
    const deep = join(root, 'a', 'b', 'c');
    makeDirectory(deep, '--data-dir');
    assert.ok(statSync(deep).isDirectory());
    makeDirectory(deep, '--data-dir');
  });

  it('fails in one line naming the setting, within a moment, where mkdir -p would never return (/proc)', () => {
    const started = Date.now();
    assert.throws(
      () => makeDirectory('/proc/frond-data/x', '--data-dir'),
      (error) =>
        isFrondError(error, 'INVALID_CONFIG') &&
        /^--data-dir \/proc\/frond-data\/x: cannot create/.test(error.message),
    );
    assert.ok(Date.now() - started < 1_000);
  });

  it('names a file in the way', () => {
    const root = mkdtempSync(join(tmpdir(), 'frond-dir-'));
    writeFileSync(join(root, 'file'), '');
    assert.throws(
      () => makeDirectory(join(root, 'file', 'data'), '--data-dir'),
      (error) => isFrondError(error, 'INVALID_CONFIG') && /not a directory/.test(error.message),
    );
  });
});
