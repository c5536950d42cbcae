import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { inspect } from 'node:util';
import { tempDir } from '../../../test/support/frond-process.js';
import { isFrondError } from '../../core/errors.js';
import { OpaqueCodec } from '../../core/opaque-codec.js';
import { OpaqueSecret } from './opaque-keys.js';

const HEX = 'a'.repeat(64);

describe('OpaqueSecret', () => {
  it('reads the secret from the environment or a file, and refuses a short one or both at once', () => {
    const dir = tempDir();
    writeFileSync(`${dir}/secret`, `${HEX}\n`);
    const inline = OpaqueSecret.fromEnvironment({ FROND_OPAQUE_SECRET: HEX });
    const file = OpaqueSecret.fromEnvironment({ FROND_OPAQUE_SECRET_FILE: `${dir}/secret` });
    assert.ok(inline && file);
    assert.equal(inline.fingerprint, file.fingerprint);
    assert.equal(OpaqueSecret.fromEnvironment({}), undefined);
    assert.throws(
      () => OpaqueSecret.fromEnvironment({ FROND_OPAQUE_SECRET: 'abcd' }),
      (error) => isFrondError(error, 'INVALID_CONFIG') && /at least 32/.test(error.message),
    );
    assert.throws(
      () =>
        OpaqueSecret.fromEnvironment({ FROND_OPAQUE_SECRET: HEX, FROND_OPAQUE_SECRET_FILE: `${dir}/secret` }),
      (error) => isFrondError(error, 'INVALID_CONFIG'),
    );
    assert.throws(
      () => OpaqueSecret.fromEnvironment({ FROND_OPAQUE_SECRET_FILE: `${dir}/missing` }),
      /^FrondError: FROND_OPAQUE_SECRET_FILE .*missing: no such file; give the path of a file holding the opaque-ID secret/,
    );
  });

  it('derives one key per tag and domain, and never shows the secret', () => {
    const secret = OpaqueSecret.fromText(HEX, 'test');
    const other = OpaqueSecret.fromText('b'.repeat(64), 'test');
    const bits = { kind: 'bits', bits: 63 } as const;
    assert.notDeepEqual(secret.keyFor('orders', bits), secret.keyFor('users', bits));
    assert.notDeepEqual(secret.keyFor('orders', bits), secret.keyFor('orders', { kind: 'bits', bits: 53 }));
    assert.notEqual(secret.keyCheck('orders', bits), other.keyCheck('orders', bits));
    assert.notEqual(secret.fingerprint, other.fingerprint);
    assert.match(secret.fingerprint, /^[0-9a-f]{16}$/);
    const shown = `${JSON.stringify({ secret })} ${inspect(secret)} ${String(secret.keyCheck('orders', bits))}`;
    assert.ok(!/aa[ ]?aa/i.test(shown), shown);
    // Two nodes with the same secret compute the same opaque IDs.
    const a = new OpaqueCodec(secret.cipherFor('orders', bits), bits);
    const b = new OpaqueCodec(OpaqueSecret.fromText(HEX, 'x').cipherFor('orders', bits), bits);
    assert.deepEqual(a.encodeMany([1n, 2n, 3n]), b.encodeMany([1n, 2n, 3n]));
  });
});
