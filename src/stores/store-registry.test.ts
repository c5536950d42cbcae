import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isFrondError } from '../core/errors.js';
import { backendOf, openStore, STORE_BACKENDS, STORE_SPECS } from './store-registry.js';

function invalid(pattern: RegExp) {
  return (error: unknown) => isFrondError(error, 'INVALID_CONFIG') && pattern.test((error as Error).message);
}

describe('store registry', () => {
  it('names every backend in the "use …" list, in registry order', () => {
    assert.equal(STORE_SPECS, 'sqlite:PATH, postgres://USER@HOST:PORT/DB or mysql://USER@HOST:PORT/DB');
  });

  it('gives each --store prefix to exactly one backend, so the order of the list decides nothing', () => {
    const prefixes = STORE_BACKENDS.flatMap((backend) => backend.prefixes);
    for (const a of prefixes) {
      assert.deepEqual(
        prefixes.filter((b) => b.startsWith(a)),
        [a],
        `${a} overlaps another prefix`,
      );
    }
    assert.equal(new Set(STORE_BACKENDS.map((backend) => backend.name)).size, STORE_BACKENDS.length);
  });

  it('finds the backend by scheme, and rejects any other scheme without showing the password', () => {
    assert.equal(backendOf('sqlite:./data/frond.db').name, 'sqlite');
    assert.equal(backendOf('postgres://u@h/d').name, 'postgres');
    assert.equal(backendOf('postgresql://u@h/d').name, 'postgres');
    assert.equal(backendOf('mysql://u@h/d').name, 'mysql');
    // Without `//` a network URL names no host; as before the registry, it is not taken at all.
    assert.throws(() => backendOf('postgres:db'), invalid(/^unsupported --store "postgres:db"/));
    assert.throws(() => backendOf('oracle://scott:tiger@h/d'), {
      code: 'INVALID_CONFIG',
      message: `unsupported --store "oracle://***@h/d": use ${STORE_SPECS}`,
    });
  });

  it('has a DDL for leaf_alloc per backend, without the final semicolon db init --print adds', () => {
    for (const backend of STORE_BACKENDS) {
      assert.match(backend.ddl, /^CREATE TABLE IF NOT EXISTS `?leaf_alloc`? \(/, backend.name);
      assert.doesNotMatch(backend.ddl, /;\s*$/, backend.name);
    }
  });

  it('redacts passwords of network URLs, and parses host, port and parameters', () => {
    const postgres = backendOf('postgres://');
    assert.equal(postgres.redact('postgres://frond:s3cret@db:5433/ids'), 'postgres://***@db:5433/ids');
    // Issue 16 item 8: a password typed with @, /, :, ?, # or % is hidden whole, and so is the user.
    for (const secret of [
      'p@ss/w:rd',
      'se/cret',
      'pass/word/x',
      'pa#ss',
      'pa?ss',
      'p%zz',
      'a:b:c',
      'x@y@z',
    ]) {
      const shown = postgres.redact(`postgres://frond:${secret}@db:5433/ids`);
      assert.equal(shown, 'postgres://***@db:5433/ids', secret);
    }
    // The `@` forgotten: a "port" that is no number is hidden too; a real host list is not.
    assert.equal(postgres.redact('postgres://frond:s3cret/ids'), 'postgres://***/ids');
    assert.equal(postgres.redact('postgres://h1:5432,[::1]:5433/ids'), 'postgres://h1:5432,[::1]:5433/ids');
    assert.throws(
      () => postgres.parse('postgres://u:p%zz@db/ids'),
      (error: Error) => {
        assert.match(error.message, /password has bad percent-encoding/);
        assert.doesNotMatch(error.message, /zz/);
        return true;
      },
    );
    assert.deepEqual(postgres.parse('postgresql://frond:s%40cret@[::1]/ids?pool=8'), {
      host: '::1',
      port: 5432,
      user: 'frond',
      password: 's@cret',
      database: 'ids',
      poolSize: 8,
      connectTimeoutMs: 5_000,
      queryTimeoutMs: 5_000,
    });
    const mysql = backendOf('mysql://');
    assert.equal((mysql.parse('mysql://root@127.0.0.1/leaf') as { port: number }).port, 3306);
    assert.throws(
      () => mysql.parse('mysql://root:pw@/leaf'),
      invalid(/^--store "mysql:\/\/\*\*\*@\/leaf" is not a valid URL/),
    );
    assert.throws(() => mysql.parse('mysql:///leaf'), invalid(/^--store mysql:\/\/\/leaf names no host/));
    assert.throws(() => openStore('postgres://h'), invalid(/names no database/));
    assert.throws(
      () => openStore('mysql://h/d?pool=0'),
      invalid(/pool="0" is invalid; use an integer from 1 to 100/),
    );
    assert.throws(() => openStore('sqlite:'), invalid(/needs a path, e.g. sqlite:\.\/data\/frond\.db/));
  });

  it('opens a network store without connecting, described without its password', async () => {
    // Port 1 has nothing listening: opening must not touch the network.
    for (const spec of ['postgres://frond:pw@127.0.0.1:1/ids', 'mysql://frond:pw@127.0.0.1:1/ids']) {
      const store = openStore(spec);
      assert.equal(store.description, spec.replace(':pw', ''));
      assert.equal(typeof store.init, 'function');
      await store.close();
    }
  });
});
