import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { decomposeSnowflake } from '../src/core/snowflake-layout.js';
import { type FrondProcess, runFrond, startFrond } from './support/frond-process.js';
import { leaseArgs } from './support/lease-coordinators.js';
import { type Traffic, traffic } from './support/snowflake-traffic.js';
import { leaseRows } from './support/sql-leases.js';
import { TcpProxy } from './support/tcp-proxy.js';
import {
  SERVICE_NAME,
  type ServerDialect,
  type TestDatabase,
  testDatabase,
} from './support/test-database.js';

const SERVER_PORT: Record<ServerDialect, number> = { postgres: 5432, mysql: 3306 };
const TTL_MS = 2000;
const SLOTS = 3;
const REDEPLOYS = 50;
/** The worker IDs left to the nodes; the test holds the other 1016, as other live nodes would. */
const FREE = [0, 1, 2, 3, 511, 512, 1022, 1023];

/**
 * Every version of every row of frond_worker_lease, in the order written, kept by a trigger the
 * test puts on the table: the history a sampling of the table would miss.
 */
const AUDIT: Record<ServerDialect, string[]> = {
  postgres: [
    `CREATE TABLE lease_audit (seq BIGSERIAL PRIMARY KEY, name TEXT, worker_id INT, holder TEXT,
       claimed_at TIMESTAMPTZ, expires_at TIMESTAMPTZ, updated_at TIMESTAMPTZ)`,
    `CREATE FUNCTION lease_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
       INSERT INTO lease_audit (name, worker_id, holder, claimed_at, expires_at, updated_at)
       VALUES (NEW.name, NEW.worker_id, NEW.holder, NEW.claimed_at, NEW.expires_at, NEW.updated_at);
       RETURN NULL; END $$`,
    'CREATE TRIGGER lease_audit AFTER INSERT OR UPDATE ON frond_worker_lease FOR EACH ROW EXECUTE FUNCTION lease_audit()',
  ],
  mysql: [
    `CREATE TABLE lease_audit (seq BIGINT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(200), worker_id INT,
       holder VARCHAR(200), claimed_at DATETIME(3), expires_at DATETIME(3), updated_at DATETIME(3)) ENGINE=InnoDB`,
    ...['INSERT', 'UPDATE'].map(
      (
        event,
      ) => `CREATE TRIGGER lease_audit_${event.toLowerCase()} AFTER ${event} ON frond_worker_lease FOR EACH ROW
       INSERT INTO lease_audit (name, worker_id, holder, claimed_at, expires_at, updated_at)
       VALUES (NEW.name, NEW.worker_id, NEW.holder, NEW.claimed_at, NEW.expires_at, NEW.updated_at)`,
    ),
  ],
};

/** One version of a row, its times in ms since 1970 by the database's clock (sub-ms kept). */
interface Version {
  workerId: number;
  holder: string;
  claimed: number;
  expires: number;
  updated: number;
}

async function history(database: TestDatabase, name: string): Promise<Version[]> {
  const ms = (column: string) =>
    database.dialect === 'postgres'
      ? `EXTRACT(EPOCH FROM ${column}) * 1000 AS ${column}`
      : `TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', ${column}) / 1000 AS ${column}`;
  const rows = await database.sql(
    `SELECT worker_id, holder, ${ms('claimed_at')}, ${ms('expires_at')}, ${ms('updated_at')} FROM lease_audit
      WHERE name = ${database.dialect === 'postgres' ? '$1' : '?'} ORDER BY seq`,
    [name],
  );
  return rows.map((row) => ({
    workerId: Number(row.worker_id),
    holder: String(row.holder),
    claimed: Number(row.claimed_at),
    expires: Number(row.expires_at),
    updated: Number(row.updated_at),
  }));
}

/** One claim (a session's hold on a worker ID) from its first version to its last. */
interface Claim {
  workerId: number;
  holder: string;
  identity: string;
  claimed: number;
  /** `expires_at` of its last version: when the database let it go (a release or expiry sets it to then). */
  end: number;
  /** It ended by expiring (a kill, a freeze, a cut), not by a release. */
  lapsed: boolean;
}

/**
 * The claims of `versions`, checking on the way that a worker ID changed holders only once the
 * previous holder's claim had ended by the database's clock: never two live holders at once.
 */
function claimsOf(versions: Version[]): { claims: Claim[]; handovers: number; lapsedHandovers: number } {
  const current = new Map<number, Claim>();
  const claims: Claim[] = [];
  let handovers = 0;
  let lapsedHandovers = 0;
  for (const version of versions) {
    const held = current.get(version.workerId);
    if (held !== undefined && held.holder === version.holder) {
      held.end = version.expires;
      held.lapsed = version.expires > version.updated;
      continue;
    }
    if (held !== undefined) {
      handovers++;
      if (held.lapsed) lapsedHandovers++;
      assert.ok(
        version.claimed >= held.end,
        `worker ${version.workerId} claimed by ${version.holder} at ${version.claimed} while ${held.holder} held it until ${held.end}`,
      );
    }
    const claim: Claim = {
      workerId: version.workerId,
      holder: version.holder,
      identity: version.holder.slice(version.holder.indexOf(' ') + 1),
      claimed: version.claimed,
      end: version.expires,
      lapsed: true,
    };
    current.set(version.workerId, claim);
    claims.push(claim);
  }
  return { claims, handovers, lapsedHandovers };
}

/** One start of a node: a new identity and data dir each time, as a container redeployed elsewhere. */
interface Incarnation {
  index: number;
  slot: number;
  identity: string;
  node: FrondProcess;
  load: Traffic;
  /** How it ended, and when (Date.now()). */
  ended?: { how: 'SIGTERM' | 'SIGKILL'; at: number };
  /** When it was frozen (SIGSTOP), if it was. */
  frozenAt?: number;
}

/**
 * Three nodes on SQL leases under load through everything that happens to containers: 50 redeploys
 * (a new identity and data dir each time, a third of them SIGKILLs), SIGSTOPs longer than the TTL,
 * and each node's database connections cut, blackholed and cut briefly through a proxy of its own.
 * Then: no snowflake ID twice; no worker ID with two live holders at any moment in the table's
 * history; and every ID's worker bits and timestamp inside a claim its node held at that time.
 */
export function describeSqlLeaseNodes(dialect: ServerDialect): void {
  const server = testDatabase(dialect);
  after(() => server.drop());

  describe(`${SERVICE_NAME[dialect]} leases: three nodes, kills, freezes, cuts and ${REDEPLOYS} redeploys`, () => {
    it('issues no snowflake ID twice and never has two live holders of a worker ID', async (t) => {
      const database = await server.open(t);
      if (database === undefined) return;
      const started = Date.now();
      const name = `nodes-${dialect}`;
      const created = await runFrond(['db', 'init', '--store', database.url]);
      assert.equal(created.code, 0, created.stderr);
      for (const statement of AUDIT[dialect]) await database.sql(statement);
      const rows = leaseRows(database);
      await rows.holdAllBut(name, FREE, 600_000);

      const proxies = await Promise.all(
        Array.from({ length: SLOTS }, () => TcpProxy.start({ port: SERVER_PORT[dialect] })),
      );
      const incarnations: Incarnation[] = [];
      const startMs: number[] = [];
      const current: Incarnation[] = [];
      t.after(async () => {
        for (const { node } of incarnations) node.child.kill('SIGCONT');
        await Promise.all(incarnations.map(({ node }) => node.stop('SIGKILL')));
        await Promise.all(proxies.map((proxy) => proxy.close()));
      });

      let launched = 0;
      const launch = async (slot: number): Promise<Incarnation> => {
        const index = launched++;
        const port = 41_000 + index;
        const url = database.urlVia((proxies[slot] as TcpProxy).port);
        // Half of them name the segment store's database (--store), half a URL of its own.
        const where =
          index % 2 === 0 ? ['--worker-lease-store', url] : ['--store', url, '--worker-lease-store', 'store'];
        const args = leaseArgs(where, name, port, String(TTL_MS));
        const before = Date.now();
        const node = await startFrond(args);
        startMs.push(Date.now() - before);
        const incarnation: Incarnation = {
          index,
          slot,
          identity: `127.0.0.1:${port}`,
          node,
          // Paced: three nodes, their database and the test share two cores, and starts must stay quick.
          load: traffic(node, 20, 10),
        };
        incarnations.push(incarnation);
        current[slot] = incarnation;
        return incarnation;
      };

      const counts = { freezes: 0, cuts: 0, blackholes: 0, blips: 0, kills: 0, terms: 0 };
      /** What happens to a slot's node before the redeploy of that number, done by the slot's own loop. */
      const chaosAt: Record<number, 'freeze' | 'cut' | 'blackhole' | 'blip'> = {
        6: 'freeze',
        14: 'cut',
        22: 'freeze',
        28: 'blackhole',
        34: 'blip',
        40: 'freeze',
        44: 'cut',
      };
      const chaos = async (slot: number, what: 'freeze' | 'cut' | 'blackhole' | 'blip') => {
        if (what === 'freeze') {
          const frozen = current[slot] as Incarnation;
          frozen.node.child.kill('SIGSTOP');
          frozen.frozenAt = Date.now();
          counts.freezes++;
          await sleep(TTL_MS + 1500);
          frozen.node.child.kill('SIGCONT');
          return;
        }
        const proxy = proxies[slot] as TcpProxy;
        if (what === 'blackhole') proxy.blackhole();
        else proxy.cut();
        counts[what === 'cut' ? 'cuts' : what === 'blackhole' ? 'blackholes' : 'blips']++;
        await sleep(what === 'blip' ? 300 : TTL_MS + 1500);
        // Silent connections are reset before new ones go through again.
        proxy.cut();
        proxy.restore();
      };
      const redeploy = async (slot: number, i: number) => {
        const old = current[slot] as Incarnation;
        const how = i % 3 === 2 ? 'SIGKILL' : 'SIGTERM';
        await old.load.stop();
        const code = await old.node.stop(how);
        old.ended = { how, at: Date.now() };
        if (how === 'SIGTERM') {
          counts.terms++;
          assert.equal(code, 0, old.node.stderr.join('\n'));
          const holders = [...(await rows.holders(name)).values()];
          assert.ok(
            holders.every((holder) => !holder.endsWith(` ${old.identity}`)),
            `${old.identity} stopped cleanly and still holds a worker ID`,
          );
        } else counts.kills++;
        await launch(slot);
      };

      for (let slot = 0; slot < SLOTS; slot++) await launch(slot);
      await sleep(500);
      // The slots are redeployed side by side, as an orchestrator rolls several containers at once;
      // while one slot's node is frozen or cut off, the others go on being redeployed.
      let next = 0;
      await Promise.all(
        Array.from({ length: SLOTS }, async (_, slot) => {
          while (next < REDEPLOYS) {
            const i = next++;
            const what = chaosAt[i];
            if (what !== undefined) await chaos(slot, what);
            await redeploy(slot, i);
          }
        }),
      );
      await sleep(1000);
      for (const incarnation of current) await incarnation.load.stop();
      for (const incarnation of current) {
        assert.equal(await incarnation.node.stop('SIGTERM'), 0);
        incarnation.ended = { how: 'SIGTERM', at: Date.now() };
      }

      // 1. No ID twice.
      const seen = new Set<bigint>();
      let total = 0;
      for (const { load } of incarnations)
        for (const id of load.ids) {
          total++;
          assert.ok(!seen.has(id), `ID ${id} issued twice (${JSON.stringify(decomposeSnowflake(id))})`);
          seen.add(id);
        }

      // 2. The table's history: a new holder only after the previous claim ended, by the database's clock.
      const { claims, handovers, lapsedHandovers } = claimsOf(await history(database, name));
      const mine = claims.filter((claim) => claim.holder !== 'other');
      assert.equal(
        await rows.holders(name).then((live) => [...live.values()].filter((h) => h !== 'other').length),
        0,
        'all released at the end',
      );

      // 3. Every ID inside a claim its node held: its worker bits and its timestamp.
      const byIdentity = new Map<string, Claim[]>();
      for (const claim of mine)
        byIdentity.set(claim.identity, [...(byIdentity.get(claim.identity) ?? []), claim]);
      let closest = Number.POSITIVE_INFINITY;
      for (const incarnation of incarnations) {
        const held = byIdentity.get(incarnation.identity) ?? [];
        assert.ok(
          held.length > 0 || incarnation.load.ids.length === 0,
          `${incarnation.identity} served without a claim`,
        );
        for (const id of incarnation.load.ids) {
          const { workerId, timestamp } = decomposeSnowflake(id);
          const claim = held.find(
            (c) => c.workerId === workerId && Math.floor(c.claimed) <= timestamp && timestamp < c.end,
          );
          assert.ok(
            claim,
            `${incarnation.identity} issued ${id} (worker ${workerId} at ${timestamp}) outside its claims ${JSON.stringify(held.filter((c) => c.workerId === workerId))}`,
          );
          closest = Math.min(closest, claim.end - timestamp);
        }
        // A killed or frozen node's claim lapsed at most one TTL after the kill or freeze (its last
        // heartbeat was before): the database freed it without hearing from the node.
        const stops = [
          incarnation.frozenAt,
          incarnation.ended?.how === 'SIGKILL' ? incarnation.ended.at : undefined,
        ];
        for (const stopped of stops) {
          if (stopped === undefined) continue;
          const last = held.filter((c) => c.claimed < stopped).at(-1);
          if (last !== undefined)
            assert.ok(
              last.end <= stopped + TTL_MS + 50,
              `${incarnation.identity}'s claim outlived its stop by ${last.end - stopped} ms`,
            );
        }
      }

      // 4. From the IDs alone: per worker ID, the nodes' runs in time never outnumber its claims.
      const runs = new Map<number, number>();
      const byWorker = new Map<number, { ts: number; who: number }[]>();
      for (const incarnation of incarnations)
        for (const id of incarnation.load.ids) {
          const { workerId, timestamp } = decomposeSnowflake(id);
          const list = byWorker.get(workerId) ?? [];
          list.push({ ts: timestamp, who: incarnation.index });
          byWorker.set(workerId, list);
        }
      for (const [workerId, list] of byWorker) {
        list.sort((a, b) => a.ts - b.ts || a.who - b.who);
        let count = 0;
        for (let i = 0; i < list.length; i++) {
          const here = list[i] as { ts: number; who: number };
          const before = list[i - 1];
          if (before !== undefined && before.who !== here.who)
            assert.ok(here.ts > before.ts, `worker ${workerId}: two nodes in ms ${here.ts}`);
          if (before === undefined || before.who !== here.who) count++;
        }
        runs.set(workerId, count);
        const claimed = mine.filter((claim) => claim.workerId === workerId).length;
        assert.ok(count <= claimed, `worker ${workerId}: ${count} runs of IDs from ${claimed} claims`);
      }

      const logged = (event: string) =>
        incarnations.filter(({ node }) => node.logs.some((line) => line.includes(`"${event}"`))).length;
      const refused = incarnations.reduce((sum, { load }) => sum + (load.statuses.get(503) ?? 0), 0);
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      t.diagnostic(
        `${SERVICE_NAME[dialect]}: ${incarnations.length} node starts (${counts.kills} SIGKILL, ${counts.terms} SIGTERM), ${counts.freezes} freezes and ${counts.cuts} cuts of ${TTL_MS + 1500} ms, ${counts.blackholes} blackhole, ${counts.blips} 300 ms cut; ${total} IDs, 0 duplicates; ${mine.length} claims on ${byWorker.size} worker IDs, ${handovers} handovers (${lapsedHandovers} of lapsed claims), never two live holders; every ID inside its node's claim (closest ${closest.toFixed(1)} ms before its end); ${refused} answers 503; starts took ${Math.min(...startMs)}–${Math.max(...startMs)} ms (median ${[...startMs].sort((a, b) => a - b)[Math.floor(startMs.length / 2)]}; ${logged('worker.claim_waiting')} waited for a free worker ID, ${logged('snowflake.clock_behind_at_start')} for the clock to pass its record); ${seconds} s`,
      );
    });
  });
}
