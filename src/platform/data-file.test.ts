import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { FrondError, isFrondError } from '../core/errors.js';
import { fileFailure, givenFileFailure, onFile, readGivenFile } from './data-file.js';

const systemError = (code: string, text: string) => Object.assign(new Error(text), { code });

describe('fileFailure', () => {
  it('names the setting and the file, with the reason in words and the code, never the system text', () => {
    const error = fileFailure(
      '--data-dir ./data',
      'data/frond.pid',
      'read',
      systemError('EISDIR', 'EISDIR: illegal operation on a directory, read'),
    );
    assert.ok(isFrondError(error, 'INVALID_CONFIG'));
    assert.equal(
      error.message,
      '--data-dir ./data: cannot read data/frond.pid (it is a directory, EISDIR); move it away: frond keeps a file of its own at that path',
    );
    assert.match(
      fileFailure(
        '--data-dir d',
        'd/x',
        'open',
        systemError('EACCES', "EACCES: permission denied, open 'd/x'"),
      ).message,
      /^--data-dir d: cannot open d\/x \(permission denied, EACCES\); give this user read and write access/,
    );
    assert.match(
      fileFailure('--data-dir d', 'd/x', 'write', systemError('EXDEV', '')).message,
      /\(EXDEV\); check/,
    );
  });

  it('leaves a FrondError as it is, and words what onFile throws', () => {
    const own = new FrondError('INVALID_CONFIG', 'd/x is damaged');
    assert.equal(fileFailure('--data-dir d', 'd/x', 'read', own), own);
    assert.throws(
      () =>
        onFile('--data-dir d', 'd/x', 'read', () => {
          throw systemError('EIO', 'EIO: i/o error, read');
        }),
      /^FrondError: --data-dir d: cannot read d\/x \(an input\/output error, EIO\)/,
    );
  });
});

describe('givenFileFailure', () => {
  it('names the setting with its path, the reason in words and what to give, never the system text', () => {
    const missing = join(tmpdir(), `frond-missing-${process.pid}`);
    assert.throws(
      () => readGivenFile(`--tls-key ${missing}`, missing, 'the PEM private key'),
      (error) =>
        isFrondError(error, 'INVALID_CONFIG') &&
        error.message === `--tls-key ${missing}: no such file; give the path of the PEM private key`,
    );
    assert.equal(
      givenFileFailure('--config /tmp', 'a JSON file', systemError('EISDIR', 'EISDIR: illegal operation'))
        .message,
      '--config /tmp: it is a directory (EISDIR); give the path of a JSON file',
    );
    assert.equal(
      givenFileFailure(
        'FROND_STORE_FILE="/s"',
        'x',
        systemError('EACCES', "EACCES: permission denied, open '/s'"),
      ).message,
      'FROND_STORE_FILE="/s": permission denied (EACCES); give this user read access to it, or start frond as a user that may read it',
    );
    const own = new FrondError('INVALID_CONFIG', 'already one line');
    assert.equal(givenFileFailure('--config x', 'y', own), own);
  });
});
