import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { tempDir } from '../../test/support/frond-process.js';
import { isFrondError } from '../core/errors.js';
import type { NetworkSqlConfig } from '../sql/network-sql.js';
import { backendOf } from '../stores/store-registry.js';
import { readLeafProperties } from './config-sources.js';
import { tlsParametersFromJdbc } from './jdbc-tls.js';
import { SERVE_OPTIONS } from './option-table.js';

/** What the store makes of a store URL. */
function openStoreConfig(store: string): NetworkSqlConfig {
  return backendOf(store).parse(store) as NetworkSqlConfig;
}

/** The store URL a leaf.properties with this JDBC URL becomes. */
function storeOf(jdbcUrl: string): string {
  const path = join(tempDir(), 'leaf.properties');
  writeFileSync(path, `leaf.jdbc.url=${jdbcUrl}\nleaf.jdbc.username=leaf\nleaf.jdbc.password=pw\n`);
  return readLeafProperties(path, SERVE_OPTIONS).values.store as string;
}

const mysql = (query: string) =>
  new URLSearchParams(tlsParametersFromJdbc('mysql', query, 'leaf.jdbc.url')).toString();

function refused(
  query: string,
  pattern: RegExp,
  dialect: 'mysql' | 'mariadb' | 'postgresql' = 'mysql',
): void {
  assert.throws(
    () => tlsParametersFromJdbc(dialect, query, 'leaf.properties: leaf.jdbc.url'),
    (error) => isFrondError(error, 'INVALID_CONFIG') && pattern.test(error.message),
    query,
  );
}

describe("leaf.jdbc.url's TLS properties", () => {
  it('keeps useSSL=true&requireSSL=true as TLS (it used to become a plain connection)', () => {
    const store = storeOf('jdbc:mysql://db.example:3306/leaf?useUnicode=true&useSSL=true&requireSSL=true');
    assert.equal(store, 'mysql://leaf:pw@db.example:3306/leaf?ssl-mode=REQUIRED');
    assert.deepEqual(openStoreConfig(store).tls, { verify: 'none' });
    // No TLS property: plain TCP, as before.
    assert.equal(storeOf('jdbc:mysql://db:3306/leaf?characterEncoding=utf8'), 'mysql://leaf:pw@db:3306/leaf');
  });

  it("translates Connector/J's sslMode and its legacy properties as Connector/J documents", () => {
    assert.equal(mysql('sslMode=VERIFY_IDENTITY&useSSL=false'), 'ssl-mode=VERIFY_IDENTITY');
    assert.equal(mysql('sslMode=verify_ca'), 'ssl-mode=VERIFY_CA');
    assert.equal(mysql('sslMode=DISABLED'), 'ssl-mode=DISABLED');
    assert.equal(mysql('useSSL=false&requireSSL=true'), 'ssl-mode=DISABLED');
    assert.equal(mysql('useSSL=true&verifyServerCertificate=true'), 'ssl-mode=VERIFY_CA');
    assert.equal(mysql('requireSSL=yes'), 'ssl-mode=REQUIRED');
    // PREFERRED (useSSL=true alone, or named) is REQUIRED: frond never falls back to plain text.
    assert.equal(mysql('useSSL=true'), 'ssl-mode=REQUIRED');
    assert.equal(mysql('sslMode=PREFERRED'), 'ssl-mode=REQUIRED');
    assert.equal(
      mysql('sslMode=REQUIRED&tlsVersions=TLSv1.2,TLSv1.3&fallbackToSystemTrustStore=true'),
      'ssl-mode=REQUIRED&tls-version=TLSv1.2%2CTLSv1.3',
    );
    assert.equal(mysql('useSSL=true&enabledTLSProtocols=TLSv1.2'), 'ssl-mode=REQUIRED&tls-version=TLSv1.2');
    assert.equal(mysql('USESSL=TRUE&REQUIRESSL=TRUE'), 'ssl-mode=REQUIRED');
  });

  it('refuses, with one line, what Node.js cannot take from a Java driver', () => {
    refused(
      'useSSL=true&trustCertificateKeyStoreUrl=file:/etc/ts.jks',
      /trustcertificatekeystoreurl: frond reads PEM/,
    );
    refused('useSSL=true&clientCertificateKeyStoreUrl=file:/k.p12', /clientcertificatekeystoreurl/);
    refused('sslMode=REQUIRED&enabledSSLCipherSuites=TLS_AES_128_GCM_SHA256', /cipher-suite names/);
    refused('useSSL=maybe', /usessl="maybe" must be true or false/);
    refused('sslMode=ON', /sslMode="ON" is invalid/);
    refused('sslMode=VERIFY_CA&fallbackToSystemTrustStore=false', /would trust no CA/);
    refused('useSsl=true&keyStore=/k.jks', /keystore: frond reads PEM/, 'mariadb');
    refused('sslfactory=org.example.Factory', /cannot be carried over/, 'postgresql');
  });

  it("translates MariaDB Connector/J's and pgJDBC's TLS properties", () => {
    const maria = (query: string) =>
      new URLSearchParams(tlsParametersFromJdbc('mariadb', query, 'leaf.jdbc.url')).toString();
    assert.equal(maria('sslMode=trust'), 'ssl-mode=REQUIRED');
    assert.equal(
      maria('sslMode=verify-full&serverSslCert=/ca.pem'),
      'ssl-mode=VERIFY_IDENTITY&ssl-ca=%2Fca.pem',
    );
    assert.equal(maria('useSsl=true&trustServerCertificate=true'), 'ssl-mode=REQUIRED');
    assert.equal(maria('useSsl=true&disableSslHostnameVerification=true'), 'ssl-mode=VERIFY_CA');
    assert.equal(maria('useSsl=true'), 'ssl-mode=VERIFY_IDENTITY');
    const pg = (query: string) =>
      new URLSearchParams(tlsParametersFromJdbc('postgresql', query, 'leaf.jdbc.url')).toString();
    assert.equal(pg('ssl=true'), 'sslmode=verify-full');
    assert.equal(pg('sslmode=prefer'), 'sslmode=require');
    assert.equal(pg('ssl=true&sslfactory=org.postgresql.ssl.NonValidatingFactory'), 'sslmode=require');
    assert.equal(
      pg('sslmode=verify-ca&sslrootcert=/ca.pem&sslcert=/c.pem&sslkey=/k.pem'),
      'sslmode=verify-ca&sslrootcert=%2Fca.pem&sslcert=%2Fc.pem&sslkey=%2Fk.pem',
    );
    const store = storeOf('jdbc:postgresql://db.example:5432/leaf?ssl=true&sslrootcert=/etc/ca.pem');
    assert.deepEqual(openStoreConfig(store).tls, { verify: 'full', caFile: '/etc/ca.pem' });
  });
});
