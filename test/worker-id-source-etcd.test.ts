import type { TestContext } from 'node:test';
import { Etcd3 } from 'etcd3';
import { systemClock } from '../src/core/clock.js';
import { silentLogger } from '../src/core/logger.js';
import { EtcdLeaseBackend } from '../src/worker-ids/etcd/etcd-lease-backend.js';
import { LeaseWorkerIdSource } from '../src/worker-ids/lease/lease-worker-id-source.js';
import { ETCD, etcdUp, randomName } from './support/coordinators.js';
import { describeWorkerIdSource } from './worker-id-source.suite.js';

const names = new WeakMap<TestContext, string>();
const nameOf = (t: TestContext) => {
  const name = names.get(t) ?? randomName();
  names.set(t, name);
  return name;
};

/** A client of the test's own, playing the other nodes; closed (its lease revoked) when the test ends. */
function otherNodes(t: TestContext): Etcd3 {
  const client = new Etcd3({ hosts: ETCD });
  t.after(() => client.close());
  return client;
}

let nextPort = 21_000;
describeWorkerIdSource(
  'etcd, lease mode',
  async (t, identity) => {
    if (!(await etcdUp(t))) return undefined;
    const source = new LeaseWorkerIdSource(
      // etcd's floor: 2 s TTLs.
      new EtcdLeaseBackend({ hosts: [ETCD], name: nameOf(t), identity, ttlMs: 2000, timeoutMs: 2000 }),
      {
        clock: systemClock,
        monotonic: () => performance.now(),
        logger: silentLogger,
        timeoutMs: 2000,
        acquireWaitMs: 1000,
        retryMs: 200,
      },
    );
    t.after(() => source.release(0).catch(() => {}));
    return source;
  },
  () => `127.0.0.1:${nextPort++}`,
  {
    kind: 'lease',
    distinct: true,
    lease: {
      async holdAllBut(t, keep) {
        const client = otherNodes(t);
        const lease = client.lease(30, { autoKeepAlive: false });
        const id = await lease.grant();
        const prefix = `/snowflake/${nameOf(t)}/lease/claims/`;
        await Promise.all(
          Array.from({ length: 1024 }, (_, workerId) =>
            workerId === keep
              ? undefined
              : client.put(`${prefix}${workerId}`).value('other').lease(id).exec(),
          ),
        );
        t.after(() => lease.revoke().catch(() => {}));
      },
      async dropClaim(t, workerId) {
        const client = otherNodes(t);
        await client
          .delete()
          .key(`/snowflake/${nameOf(t)}/lease/claims/${workerId}`)
          .exec();
      },
    },
  },
);
