// TLS to the database (issue 17), against servers this test starts with TLS on (support/tls-databases.ts):
// each mode of the store URL against PostgreSQL and MariaDB that refuse plain TCP, a wrong CA, a
// certificate without the host's name, client certificates, and Leaf's leaf.jdbc.url with
// `useSSL=true&requireSSL=true` served by a real `frond serve --leaf-config` (issue 12, item 5).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isFrondError } from '../src/core/errors.js';
import { openStore } from '../src/stores/store-registry.js';
import { startFrond, tempDir } from './support/frond-process.js';
import { httpGet } from './support/http-get.js';
import { serviceMissing } from './support/service-gate.js';
import { unjournaled } from './support/store-views.js';
import {
  makeCertificates,
  missingTool,
  startTlsMariadb,
  startTlsPostgres,
  type TestCertificates,
  type TestServer,
} from './support/tls-databases.js';

const FAST = 'connect_timeout_ms=3000&query_timeout_ms=3000';

/** Opens the store, makes the table and a tag and takes one segment; closes it again. */
async function allocate(spec: string): Promise<bigint> {
  const store = openStore(spec);
  try {
    await store.init?.();
    const tag = `tls_${Math.random().toString(36).slice(2, 10)}`;
    await store.addTag({ tag, step: 10, start: 1n, description: null });
    const allocation = await unjournaled(store).advance(tag);
    assert.ok(allocation);
    return allocation.maxId;
  } finally {
    await store.close();
  }
}

async function refused(spec: string, pattern: RegExp): Promise<void> {
  await assert.rejects(allocate(spec), (error) => {
    assert.ok(isFrondError(error), String(error));
    assert.match(error.message, pattern);
    return true;
  });
}

describe('TLS to PostgreSQL (a cluster this test makes, ssl=on, plain TCP refused)', () => {
  let dir = '';
  let certs: TestCertificates;
  let server: TestServer | undefined;
  let url = (_query: string, _host?: string, _user?: string) => '';

  before(async () => {
    if (missingTool('postgres') !== undefined) return;
    dir = tempDir('frond-pg-tls-');
    certs = makeCertificates(join(dir, 'certs'), 'frond_cert');
    server = await startTlsPostgres(dir, certs);
    url = (query, host = '127.0.0.1', user = 'postgres') =>
      `postgres://${user}@${host}:${server?.port}/postgres?${FAST}&${query}`;
  });
  after(async () => server?.stop());

  it('connects with each sslmode and refuses what its checks refuse', async (t) => {
    const missing = missingTool('postgres');
    if (missing !== undefined) return serviceMissing(t, 'PostgreSQL 15 tools', missing);
    await refused(url('sslmode=disable'), /no encryption|pg_hba/);
    assert.ok((await allocate(url('sslmode=require'))) > 0n);
    assert.ok((await allocate(url(`sslmode=verify-ca&sslrootcert=${certs.ca}`))) > 0n);
    // The certificate names localhost only: verify-full passes by name, fails by address.
    assert.ok((await allocate(url(`sslmode=verify-full&sslrootcert=${certs.ca}`, 'localhost'))) > 0n);
    await refused(
      url(`sslmode=verify-full&sslrootcert=${certs.ca}`),
      /IP: 127\.0\.0\.1 is not in the cert's list/,
    );
    await refused(
      url(`sslmode=verify-ca&sslrootcert=${certs.otherCa}`),
      /self.signed|unable to verify|certificate/i,
    );
    // Node.js's own CA list does not hold the test's CA.
    await refused(url('sslmode=verify-full', 'localhost'), /self.signed|unable to (verify|get)|certificate/i);
    await refused(
      url('sslmode=require&sslrootcert=/nonexistent/ca.pem'),
      /^--store postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres: sslrootcert=\/nonexistent\/ca\.pem: no such file; give the path of the PEM file of the CAs/,
    );
  });

  it('logs in with a client certificate where the server asks for one', async (t) => {
    const missing = missingTool('postgres');
    if (missing !== undefined) return serviceMissing(t, 'PostgreSQL 15 tools', missing);
    const client = `sslcert=${certs.clientCert}&sslkey=${certs.clientKey}`;
    assert.ok(
      (await allocate(
        url(`sslmode=verify-full&sslrootcert=${certs.ca}&${client}`, 'localhost', 'frond_cert'),
      )) > 0n,
    );
    await refused(
      url(`sslmode=verify-full&sslrootcert=${certs.ca}`, 'localhost', 'frond_cert'),
      /certificate/i,
    );
  });
});

describe('TLS to MariaDB (an instance this test starts with --ssl-*, plain TCP refused)', () => {
  let dir = '';
  let certs: TestCertificates;
  let server: TestServer | undefined;
  let url = (_query: string, _host?: string, _user?: string) => '';

  before(async () => {
    if (missingTool('mariadb') !== undefined) return;
    dir = tempDir('frond-mariadb-tls-');
    certs = makeCertificates(join(dir, 'certs'), 'frond_x509');
    server = await startTlsMariadb(dir, certs);
    url = (query, host = '127.0.0.1', user = 'frond:pw') =>
      `mysql://${user}@${host}:${server?.port}/frond?${FAST}&${query}`;
  });
  after(async () => server?.stop());

  it('connects with each ssl-mode and refuses what its checks refuse', async (t) => {
    const missing = missingTool('mariadb');
    if (missing !== undefined) return serviceMissing(t, 'MariaDB tools', missing);
    await refused(url('ssl-mode=DISABLED'), /secure transport|require_secure_transport|3159|denied/i);
    assert.ok((await allocate(url('ssl-mode=REQUIRED'))) > 0n);
    assert.ok((await allocate(url(`ssl-mode=VERIFY_CA&ssl-ca=${certs.ca}`))) > 0n);
    assert.ok((await allocate(url(`ssl-ca=${certs.ca}&tls-version=TLSv1.2,TLSv1.3`))) > 0n);
    assert.ok((await allocate(url(`ssl-mode=VERIFY_IDENTITY&ssl-ca=${certs.ca}`, 'localhost'))) > 0n);
    await refused(
      url(`ssl-mode=VERIFY_CA&ssl-ca=${certs.otherCa}`),
      /self.signed|unable to verify|certificate/i,
    );
    await refused(url('ssl-mode=VERIFY_CA'), /self.signed|unable to (verify|get)|certificate/i);
  });

  it('logs in with a client certificate where the user requires X509', async (t) => {
    const missing = missingTool('mariadb');
    if (missing !== undefined) return serviceMissing(t, 'MariaDB tools', missing);
    const client = `ssl-cert=${certs.clientCert}&ssl-key=${certs.clientKey}`;
    assert.ok(
      (await allocate(url(`ssl-mode=VERIFY_CA&ssl-ca=${certs.ca}&${client}`, '127.0.0.1', 'frond_x509'))) >
        0n,
    );
    await refused(url(`ssl-mode=VERIFY_CA&ssl-ca=${certs.ca}`, '127.0.0.1', 'frond_x509'), /denied/i);
  });

  it("serves IDs with Leaf's leaf.properties whose JDBC URL says useSSL=true&requireSSL=true", async (t) => {
    const missing = missingTool('mariadb');
    if (missing !== undefined) return serviceMissing(t, 'MariaDB tools', missing);
    const properties = join(dir, 'leaf.properties');
    const jdbc = (query: string) =>
      `leaf.name=tls\nleaf.segment.enable=true\nleaf.snowflake.enable=false\nleaf.jdbc.url=jdbc:mysql://127.0.0.1:${server?.port}/frond?useUnicode=true&characterEncoding=utf8&${query}\nleaf.jdbc.username=frond\nleaf.jdbc.password=pw\n`;
    writeFileSync(properties, jdbc('useSSL=true&requireSSL=true'));
    const tag = `leaf_${Math.random().toString(36).slice(2, 10)}`;
    const store = openStore(`mysql://frond:pw@127.0.0.1:${server?.port}/frond?ssl-mode=REQUIRED`);
    try {
      await store.init?.();
      await store.addTag({ tag, step: 100, start: 1n, description: null });
    } finally {
      await store.close();
    }
    const node = await startFrond([
      '--port',
      '0',
      '--data-dir',
      join(dir, 'node'),
      '--leaf-config',
      properties,
    ]);
    try {
      assert.equal((await httpGet(`${node.url}/api/segment/get/${tag}`)).body, '1');
    } finally {
      await node.stop();
    }
    // The same file with useSSL=false is a plain connection, which this server refuses.
    writeFileSync(properties, jdbc('useSSL=false'));
    const plain = await startFrond([
      '--port',
      '0',
      '--data-dir',
      join(dir, 'node-plain'),
      '--leaf-config',
      properties,
    ]);
    try {
      const answer = await httpGet(`${plain.url}/api/segment/get/${tag}`);
      assert.notEqual(answer.body, '101');
      assert.notEqual(answer.status, 200);
    } finally {
      await plain.stop();
    }
  });
});
