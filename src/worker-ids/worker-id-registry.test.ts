import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SERVE_OPTIONS } from '../cli/option-table.js';
import { isFrondError } from '../core/errors.js';
import { COORDINATOR_BACKENDS, type CoordinatorFlags, coordinatorConfig } from './worker-id-registry.js';

const base: CoordinatorFlags = {
  name: 'orders',
  advertise: undefined,
  advertisePort: undefined,
  workerLease: false,
  workerLeaseTtlMs: 6000,
  coordinatorTimeoutMs: 3000,
  clockMaxSkewMs: 5000,
  leafTmpdir: '/tmp',
  workerId: undefined,
  port: 8080,
};

describe('worker-ID backend registry', () => {
  it("puts every backend's own setting into the option table of frond serve", () => {
    for (const backend of COORDINATOR_BACKENDS)
      assert.ok(SERVE_OPTIONS.includes(backend.option), `--${backend.option.flag} is not in SERVE_OPTIONS`);
  });

  it('picks the backend whose setting is given, and refuses two at once', () => {
    assert.equal(coordinatorConfig(base), undefined, 'no coordinator: the data dir file');
    assert.equal(coordinatorConfig({ ...base, zk: '127.0.0.1:2181' })?.kind, 'zookeeper');
    assert.equal(coordinatorConfig({ ...base, zk: '127.0.0.1:2181' })?.lease, false, "Leaf's layout");
    const etcd = coordinatorConfig({ ...base, etcd: 'http://127.0.0.1:2379' });
    assert.deepEqual([etcd?.kind, etcd?.lease], ['etcd', true], 'etcd is always lease mode');
    assert.throws(
      () => coordinatorConfig({ ...base, zk: '127.0.0.1:2181', etcd: 'http://127.0.0.1:2379' }),
      (error) => isFrondError(error, 'INVALID_ARGUMENT') && /--zk and --etcd: pick one/.test(error.message),
    );
  });

  it("checks endpoints with the backend's own syntax", () => {
    assert.throws(
      () => coordinatorConfig({ ...base, zk: 'http://127.0.0.1:2181' }),
      /--zk "http:\/\/127.0.0.1:2181" is invalid: use host:port/,
    );
    assert.throws(
      () => coordinatorConfig({ ...base, etcd: '127.0.0.1:2379' }),
      /--etcd "127.0.0.1:2379" is invalid: use http:\/\/host:port/,
    );
  });

  it('takes one database URL for SQL leases, or the one --store names, never split at a comma', () => {
    const own = coordinatorConfig({ ...base, workerLeaseStore: 'postgres://u:a,b@db/ids' });
    assert.deepEqual([own?.kind, own?.lease, own?.endpoints], ['sql', true, ['postgres://u:a,b@db/ids']]);
    const shared = coordinatorConfig({
      ...base,
      store: 'mysql://frond@db/ids',
      workerLeaseStore: 'store',
    });
    assert.deepEqual(shared?.endpoints, ['mysql://frond@db/ids']);
    assert.throws(
      () => coordinatorConfig({ ...base, store: 'sqlite:ids.db', workerLeaseStore: 'store' }),
      (error) =>
        isFrondError(error, 'INVALID_ARGUMENT') && /SQLite file is one machine's/.test(error.message),
    );
    assert.throws(
      () => coordinatorConfig({ ...base, workerLeaseStore: 'postgres://u:secret@db/ids?pool=0' }),
      (error) =>
        isFrondError(error, 'INVALID_CONFIG') &&
        /^--worker-lease-store postgres:\/\/\*\*\*@db\/ids\?pool=0: pool="0" is invalid/.test(error.message),
    );
    assert.throws(
      () => coordinatorConfig({ ...base, workerLeaseStore: 'mysql://db/ids', etcd: 'http://127.0.0.1:2379' }),
      /--etcd and --worker-lease-store: pick one/,
    );
  });
});
