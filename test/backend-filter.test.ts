import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backendOf, backendSkip } from './support/backend-filter.js';

describe('FROND_TEST_BACKENDS', () => {
  it('names the backend of every contract suite by its first word', () => {
    assert.equal(backendOf('PostgreSQL, fenced'), 'postgres');
    assert.equal(backendOf('MariaDB'), 'mysql');
    assert.equal(backendOf('SQLite, fenced'), 'sqlite');
    assert.equal(backendOf('ZooKeeper, lease mode'), 'zookeeper');
    assert.equal(backendOf('memory (test/support)'), 'memory');
  });

  it('runs every suite when unset, and only the listed backends when set', () => {
    assert.equal(backendSkip('MariaDB', {}), false);
    assert.equal(backendSkip('MariaDB', { FROND_TEST_BACKENDS: 'mysql' }), false);
    assert.equal(backendSkip('MariaDB, fenced', { FROND_TEST_BACKENDS: 'sqlite, mariadb' }), false);
    assert.match(
      String(backendSkip('etcd, lease mode', { FROND_TEST_BACKENDS: 'postgres' })),
      /leaves out etcd/,
    );
  });
});
