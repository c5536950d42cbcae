import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isFrondError } from '../core/errors.js';
import { mysqlBackend } from '../stores/mysql/mysql-backend.js';
import { postgresBackend } from '../stores/postgres/postgres-backend.js';

const pgTls = (query: string) =>
  postgresBackend.parse(`postgres://u:secret@db.example:5432/ids?${query}`).tls;
const myTls = (query: string, host = 'db.example') =>
  mysqlBackend.parse(`mysql://u:secret@${host}:3306/ids?${query}`).tls;

function refused(read: () => unknown, pattern: RegExp): void {
  assert.throws(
    read,
    (error) =>
      isFrondError(error, 'INVALID_CONFIG') &&
      pattern.test(error.message) &&
      !error.message.includes('secret'),
    String(pattern),
  );
}

describe('store URL TLS parameters', () => {
  it("reads libpq's sslmode, sslrootcert, sslcert and sslkey for PostgreSQL", () => {
    assert.equal(postgresBackend.parse('postgres://u@h/db').tls, undefined);
    assert.equal(pgTls('sslmode=disable'), undefined);
    assert.deepEqual(pgTls('sslmode=require'), { verify: 'none' });
    // As libpq: require with a root certificate checks the chain.
    assert.deepEqual(pgTls('sslmode=require&sslrootcert=/ca.pem'), { verify: 'ca', caFile: '/ca.pem' });
    assert.deepEqual(pgTls('sslmode=verify-ca&sslrootcert=/ca.pem'), { verify: 'ca', caFile: '/ca.pem' });
    assert.deepEqual(pgTls('sslmode=verify-full&sslrootcert=system'), { verify: 'full' });
    assert.deepEqual(pgTls('sslmode=verify-full&sslrootcert=/ca.pem&sslcert=/c.pem&sslkey=/k.pem&pool=2'), {
      verify: 'full',
      caFile: '/ca.pem',
      certFile: '/c.pem',
      keyFile: '/k.pem',
    });
  });

  it('refuses what would fall back to plain text or cannot be honoured, with one line', () => {
    refused(() => pgTls('sslmode=prefer'), /sslmode=prefer may fall back to plain text/);
    refused(() => pgTls('sslmode=allow'), /sslmode=allow may fall back/);
    refused(() => pgTls('sslmode=verify'), /sslmode="verify" is invalid; use disable, require/);
    refused(() => pgTls('sslrootcert=/ca.pem'), /sslrootcert needs sslmode=/);
    refused(() => pgTls('sslmode=require&sslcert=/c.pem'), /sslcert and sslkey go together/);
    refused(() => pgTls('sslmode=disable&sslrootcert=/ca.pem'), /sslmode=disable with sslrootcert/);
    refused(
      () => pgTls('sslmode=require&sslrootcert=system'),
      /sslrootcert=system needs sslmode=verify-full/,
    );
    refused(() => pgTls('ssl-mode=REQUIRED'), /unknown parameter "ssl-mode"; use pool, .*sslmode/);
    refused(() => myTls('ssl-mode=PREFERRED'), /ssl-mode=PREFERRED may fall back to plain text/);
    refused(() => myTls('ssl-mode=ON'), /ssl-mode="ON" is invalid/);
    refused(() => myTls('ssl-cert=/c.pem&ssl-key=/k.pem'), /needs ssl-mode=/);
    refused(() => myTls('ssl-mode=REQUIRED&ssl-key=/k.pem'), /ssl-cert and ssl-key go together/);
    refused(() => myTls('ssl-mode=REQUIRED&tls-version=SSLv3'), /tls-version="SSLv3": use a comma list/);
    refused(
      () => myTls('ssl-mode=VERIFY_IDENTITY', '10.0.0.5'),
      /VERIFY_IDENTITY needs the server's host name/,
    );
    refused(() => myTls('sslmode=require'), /unknown parameter "sslmode"; use .*ssl-mode/);
  });

  it("reads MySQL's ssl-mode, ssl-ca, ssl-cert, ssl-key and tls-version for MySQL and MariaDB", () => {
    assert.equal(mysqlBackend.parse('mysql://u@h/db').tls, undefined);
    assert.equal(myTls('ssl-mode=DISABLED'), undefined);
    assert.deepEqual(myTls('ssl-mode=required'), { verify: 'none' });
    // A CA without a mode is a CA checked.
    assert.deepEqual(myTls('ssl-ca=/ca.pem'), { verify: 'ca', caFile: '/ca.pem' });
    assert.deepEqual(myTls('ssl-mode=VERIFY_CA&ssl-ca=/ca.pem', '10.0.0.5'), {
      verify: 'ca',
      caFile: '/ca.pem',
    });
    assert.deepEqual(
      myTls(
        'ssl-mode=VERIFY_IDENTITY&ssl-ca=/ca.pem&ssl-cert=/c.pem&ssl-key=/k.pem&tls-version=TLSv1.3,TLSv1.2',
      ),
      {
        verify: 'full',
        caFile: '/ca.pem',
        certFile: '/c.pem',
        keyFile: '/k.pem',
        minVersion: 'TLSv1.2',
        maxVersion: 'TLSv1.3',
      },
    );
  });
});
