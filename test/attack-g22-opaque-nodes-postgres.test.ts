import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { OpaqueCodec, parseDomain } from '../src/core/opaque-codec.js';
import { OpaqueSecret } from '../src/server/opaque/opaque-keys.js';
import { type FrondProcess, runFrond, startFrond, tempDir } from './support/frond-process.js';
import { freePort, GrpcTestClient, grpcAddressOf } from './support/grpc-client.js';
import { randomTag } from './support/random-tag.js';
import { testDatabase } from './support/test-database.js';

const database = testDatabase('postgres');

/**
 * Attack on the halves path (domains past 2^53) across processes: two nodes on one PostgreSQL, IDs
 * over HTTP and gRPC, one node SIGKILLed mid-traffic and restarted. Every ID served must be the
 * bigint reading's encoding of a segment ID no other served ID has (decoded with a reference codec
 * built here from the same secret), so no opaque ID is served twice and none is off the reference.
 */
describe('attack g22: opaque IDs past 2^53 from two nodes on PostgreSQL', () => {
  after(() => database.drop());

  for (const domainText of ['bits:63', 'digits:18']) {
    it(`${domainText}: two nodes, HTTP and gRPC batches, one SIGKILLed and restarted: no ID twice, each the reference FF1 of a distinct segment ID`, async (t) => {
      const db = await database.open(t);
      if (db === undefined) return;
      const secretHex = randomBytes(32).toString('hex');
      const env = { FROND_OPAQUE_SECRET: secretHex };
      const tag = randomTag('g22o');
      const added = await runFrond(
        ['tag', 'add', tag, '--opaque', domainText, '--step', '700', '--store', db.url],
        { env },
      );
      assert.equal(added.code, 0, added.stderr);
      const dirs = [tempDir('frond-g22-'), tempDir('frond-g22-')];
      const grpcPorts = [await freePort(), await freePort()];
      const args = (i: number) => [
        ...['--port', '0', '--host', '127.0.0.1', '--data-dir', dirs[i] as string],
        ...['--no-snowflake', '--store', db.url, '--grpc-port', String(grpcPorts[i])],
      ];
      const nodes: FrondProcess[] = [];
      for (let i = 0; i < 2; i++) nodes.push(await startFrond(args(i), { env }));
      const clients = nodes.map((node) => new GrpcTestClient(grpcAddressOf(node.logs)));
      const ids: string[] = [];
      try {
        const load = async (i: number, rounds: number) => {
          for (let r = 0; r < rounds; r++) {
            const node = nodes[i] as FrondProcess;
            const response = await fetch(`${node.url}/v1/segment/${tag}?count=1500`).catch(() => undefined);
            if (response?.status === 200) ids.push(...((await response.json()) as { ids: string[] }).ids);
            const answer = await (clients[i] as GrpcTestClient).call<{ ids: string[] }>(
              'Batch',
              { tag, count: 2500 },
              { deadlineMs: 10_000 },
            );
            if (answer.reply) ids.push(...answer.reply.ids);
            const one = await (clients[i] as GrpcTestClient).call<{ id: string }>('Next', { tag });
            if (one.reply) ids.push(one.reply.id);
          }
        };
        const other = load(1, 12);
        await load(0, 4);
        (clients[0] as GrpcTestClient).close();
        await (nodes[0] as FrondProcess).stop('SIGKILL');
        nodes[0] = await startFrond(args(0), { env });
        clients[0] = new GrpcTestClient(grpcAddressOf((nodes[0] as FrondProcess).logs));
        await Promise.all([other, load(0, 6)]);
      } finally {
        for (const client of clients) client.close();
        await Promise.all(nodes.map((node) => node.stop()));
      }
      assert.ok(ids.length > 30_000, `${ids.length} IDs`);
      assert.equal(new Set(ids).size, ids.length, 'an opaque ID was served twice');
      const domain = parseDomain(domainText);
      const secret = OpaqueSecret.fromText(secretHex, 'test');
      const reference = new OpaqueCodec(secret.cipherFor(tag, domain), domain, { reference: true });
      const opaque = ids.map((id) => BigInt(id));
      const segments = reference.decodeMany(opaque);
      assert.equal(new Set(segments).size, segments.length, 'two IDs from one segment ID');
      assert.ok(segments.every((s) => s >= 1n && s <= reference.capacity));
      assert.deepEqual(reference.encodeMany(segments), opaque, 'an ID differs from the reference encoding');
    });
  }
});
