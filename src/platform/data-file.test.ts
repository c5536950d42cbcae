import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FrondError, isFrondError } from '../core/errors.js';
import { fileFailure, onFile } from './data-file.js';

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
