import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it, type TestContext } from 'node:test';
import type { OpenedStore } from '../src/stores/store-backend.js';
import { openStore } from '../src/stores/store-registry.js';
import { backendSkip } from './support/backend-filter.js';
import {
  type CommandResult,
  type FrondProcess,
  runFrond,
  startFrond,
  tempDir,
} from './support/frond-process.js';
import { randomTag } from './support/random-tag.js';
import { unjournaled } from './support/store-views.js';
import { onTerminal } from './support/terminal.js';
import { testDatabase } from './support/test-database.js';

// `frond tag remove` (issue 25, item 9): a removed name never comes back below what it served.

const postgres = testDatabase('postgres');
const mysql = testDatabase('mysql');
// The fence tests have databases of their own: a fence raises the first ID of every new name on
// its database (src/stores/new-names.ts), and the others add new names from 1.
const fencedPostgres = testDatabase('postgres');
const fencedMysql = testDatabase('mysql');
after(() => Promise.all([postgres, mysql, fencedPostgres, fencedMysql].map((db) => db.drop())));

const BACKENDS: { name: string; spec(t: TestContext, fenced?: boolean): Promise<string | undefined> }[] = [
  { name: 'SQLite', spec: async () => `sqlite:${join(tempDir(), 'frond.db')}` },
  {
    name: 'PostgreSQL',
    spec: async (t, fenced) => (await (fenced ? fencedPostgres : postgres).open(t))?.url,
  },
  { name: 'MariaDB', spec: async (t, fenced) => (await (fenced ? fencedMysql : mysql).open(t))?.url },
];

/** `frond db fence`: an epoch no row is above, so the fence runs (after creating the row if need be). */
async function fence(store: OpenedStore, skip: bigint, atLeast = new Map<string, bigint>()): Promise<void> {
  const request = { observedEpoch: Number.MAX_SAFE_INTEGER, aboveEpoch: 0, skip, atLeast };
  let outcome = await store.fence(request);
  if (!outcome.fenced) outcome = await store.fence({ ...request, aboveEpoch: outcome.epoch });
  assert.equal(outcome.fenced, true);
}

for (const backend of BACKENDS) {
  describe(`a removed tag and the fence: ${backend.name}`, { skip: backendSkip(backend.name) }, () => {
    // A removal on a database that lost commits (a failover to a replica that was behind, a
    // restore) and was not fenced yet keeps a high-water below what nodes were granted. The fence
    // that follows raises every row past that; it raises the removed names' records too, or the
    // tag added again would start among IDs already served.
    it("raises a removed tag's high-water by the skip and to the floors it is given", async (t) => {
      const spec = await backend.spec(t, true);
      if (spec === undefined) return;
      const store = openStore(spec);
      const grants = unjournaled(store);
      try {
        const [removed, floored, present] = [randomTag(), randomTag(), randomTag()];
        for (const tag of [removed, floored, present]) {
          await store.addTag({ tag, step: 10, start: 1n });
          assert.equal((await grants.advance(tag))?.maxId, 11n);
        }
        assert.equal(await store.removeTag(removed), 11n);
        assert.equal(await store.removeTag(floored), 11n);
        await fence(store, 1000n, new Map([[floored, 50_000n]]));
        assert.equal((await store.tag(present))?.maxId, 1011n, 'a row is raised by the skip');
        await store.addTag({ tag: removed, step: 10, start: 1n });
        assert.equal((await store.tag(removed))?.maxId, 1011n, 'so is a removed name');
        await store.addTag({ tag: floored, step: 10, start: 1n });
        assert.equal((await store.tag(floored))?.maxId, 50_000n, 'and to the floor a node knows');
        assert.equal((await grants.advance(floored))?.maxId, 50_010n);
        // A row the fence raised above its record: the removal keeps the row's max_id, the higher.
        assert.equal(await store.removeTag(present), 1011n);
        await store.addTag({ tag: present, step: 10, start: 1n });
        assert.equal((await grants.advance(present))?.maxId, 1021n);
      } finally {
        await store.close();
      }
    });
  });
}

/** How often the node of the process tests reads its tag list (`--tag-refresh-ms`). */
const REFRESH_MS = 1_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Reply {
  status: number;
  code: string | undefined;
  ids: bigint[];
}

async function one(node: FrondProcess, tag: string): Promise<Reply> {
  const response = await fetch(`${node.url}/v1/segment/${tag}`);
  const body = (await response.json()) as { ids?: string[]; error?: { code: string } };
  return { status: response.status, code: body.error?.code, ids: (body.ids ?? []).map(BigInt) };
}

function succeeded(result: CommandResult): string {
  assert.equal(result.code, 0, result.stderr);
  // The tag and db commands name the store they used on stderr, and say nothing else there.
  assert.match(result.stderr, /^(store: \S+\n)?$/);
  return result.stdout;
}

for (const backend of BACKENDS) {
  describe(`frond tag remove on a running node: ${backend.name}`, {
    timeout: 180_000,
    skip: backendSkip(backend.name),
  }, () => {
    it('the node answers 404 within its tag refresh; added again, it serves IDs above every earlier one', async (t) => {
      const spec = await backend.spec(t);
      if (spec === undefined) return;
      const store = ['--store', spec];
      const tag = randomTag();
      // The tag commands never make an SQLite store by themselves: `db init` does.
      if (spec.startsWith('sqlite:')) succeeded(await runFrond(['db', 'init', ...store]));
      // Another tag: a node keeps its buffers when the tag list reads empty (docs/api.md).
      succeeded(await runFrond(['tag', 'add', randomTag(), ...store]));
      // A step of 1000: what the node holds outlasts the test, so only the refresh can stop it.
      assert.match(succeeded(await runFrond(['tag', 'add', tag, ...store])), /first ID 1, step 1000/);
      const node = await startFrond([
        '--port',
        '0',
        '--data-dir',
        tempDir(),
        '--tag-refresh-ms',
        String(REFRESH_MS),
        ...store,
      ]);
      try {
        const before: bigint[] = [];
        for (let i = 0; i < 20; i++) before.push(...(await one(node, tag)).ids);
        assert.equal(before.length, 20);

        const removed = succeeded(await runFrond(['tag', 'remove', tag, '--yes', ...store]));
        const match =
          /^removed tag (\S+) from (\S+): max_id (\d+) kept in frond_high_water, so a tag added again under the name starts at \3 or above\n$/.exec(
            removed,
          );
        assert.ok(match, removed);
        assert.equal(match[1], tag);
        assert.ok(
          spec.startsWith('sqlite:') ? match[2] === spec : match[2]?.startsWith(spec.split('@')[0] as string),
          removed,
        );
        const kept = BigInt(match[3] as string);
        const removedAt = Date.now();
        // Until the node reads its tag list again it serves what it holds: IDs granted before the
        // removal, never one granted to anyone after it.
        let reply = await one(node, tag);
        while (reply.status === 200 && Date.now() - removedAt < REFRESH_MS + 5_000) {
          before.push(...reply.ids);
          await sleep(20);
          reply = await one(node, tag);
        }
        const waited = Date.now() - removedAt;
        assert.equal(reply.status, 404, JSON.stringify(reply));
        assert.equal(reply.code, 'TAG_NOT_FOUND');
        assert.ok(waited <= REFRESH_MS + 1_500, `404 after ${waited} ms, refresh every ${REFRESH_MS} ms`);
        t.diagnostic(`404 ${waited} ms after the removal; ${before.length} IDs served`);
        for (let i = 0; i < 5; i++) assert.equal((await one(node, tag)).status, 404);
        let top = 0n;
        for (const id of before) if (id > top) top = id;
        assert.ok(top < kept, `served ${top}, kept ${kept}`);

        // The same name from 1 again (no --start): it starts at the max_id kept.
        assert.match(
          succeeded(await runFrond(['tag', 'add', tag, ...store])),
          new RegExp(
            `^added tag ${tag}: first ID ${kept}, not 1: frond_high_water holds IDs up to ${kept} for the name`,
          ),
        );
        const addedAt = Date.now();
        reply = await one(node, tag);
        // The node remembers the tag missing for 1 s, then loads it on the next request.
        while (reply.status === 404 && Date.now() - addedAt < REFRESH_MS + 5_000) {
          await sleep(20);
          reply = await one(node, tag);
        }
        const after: bigint[] = [...reply.ids];
        for (let i = 0; i < 20; i++) after.push(...(await one(node, tag)).ids);
        assert.equal(after.length, 21);
        assert.equal(after[0], kept);
        for (const id of after) assert.ok(id > top, `${id} is not above ${top}`);
        const all = [...before, ...after];
        assert.equal(new Set(all).size, all.length, 'an ID was served twice');
      } finally {
        await node.stop();
      }
    });
  });
}

describe('frond tag remove asks first', { timeout: 120_000 }, () => {
  const newStore = async (): Promise<{ tag: string; store: string[] }> => {
    const tag = randomTag();
    const store = ['--store', `sqlite:${join(tempDir(), 'frond.db')}`];
    succeeded(await runFrond(['db', 'init', ...store]));
    succeeded(await runFrond(['tag', 'add', tag, ...store]));
    return { tag, store };
  };
  const present = async (tag: string, store: string[]) =>
    succeeded(await runFrond(['tag', 'list', '--json', ...store])).includes(`"${tag}"`);

  it('refuses without --yes where stdin is not a terminal (exit 2), and a tag without a row (exit 1)', async () => {
    const { tag, store } = await newStore();
    const refused = await runFrond(['tag', 'remove', tag, ...store]);
    assert.equal(refused.code, 2);
    assert.equal(
      refused.stderr,
      `frond: 'frond tag remove' asks before it changes anything, and stdin is not a terminal: add --yes to remove ${tag} without asking\n`,
    );
    assert.equal(refused.stdout, '');
    assert.ok(await present(tag, store), 'nothing was removed');
    const missing = await runFrond(['tag', 'remove', randomTag('missing'), '--yes', ...store]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^frond: tag missing-\w+ has no row in leaf_alloc \(store sqlite:\S+\)\n$/);
    succeeded(await runFrond(['tag', 'remove', tag, '--yes', ...store]));
    assert.ok(!(await present(tag, store)));
    const twice = await runFrond(['tag', 'remove', tag, '--yes', ...store]);
    assert.equal(twice.code, 1, twice.stderr);
  });

  it('asks y/N on a terminal: anything but y or yes leaves the tag', async () => {
    const { tag, store } = await newStore();
    for (const answer of ['n', '', 'yess', 'nope']) {
      const result = await typed(['tag', 'remove', tag, ...store], `${answer}\n`);
      assert.equal(result.code, 1, result.output);
      assert.match(
        result.output,
        new RegExp(`remove tag ${tag} \\(max_id 1, step 1000\\) from sqlite:\\S+\\? \\[y/N\\] `),
      );
      assert.match(result.output, new RegExp(`frond: tag ${tag} not removed`));
      assert.ok(await present(tag, store), `removed on ${JSON.stringify(answer)}`);
    }
    const result = await typed(['tag', 'remove', tag, ...store], 'Y\n');
    assert.equal(result.code, 0, result.output);
    assert.match(
      result.output,
      new RegExp(`removed tag ${tag} from sqlite:\\S+: max_id 1 kept in frond_high_water`),
    );
    assert.ok(!(await present(tag, store)));
    // Without a row, nothing is asked.
    const missing = await typed(['tag', 'remove', tag, ...store], '');
    assert.equal(missing.code, 1);
    assert.doesNotMatch(missing.output, /\[y\/N\]/);
  });
});

/** `frond ARGS` on a terminal with `input` typed at it: its exit code and everything it showed. */
async function typed(args: string[], input: string): Promise<{ code: number | null; output: string }> {
  const running = onTerminal(args);
  running.write(input);
  const code = await running.exit(60_000);
  return { code, output: running.output() };
}
