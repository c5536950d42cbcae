// Attack: `frond tag remove` and `frond tag add` of the same name while a node still holds
// segments of it, then the node's clean stop, then another node (and the first again) serving the
// name: nothing answered twice, no ID both answered (by another node) and in a gap, no fence. On
// PostgreSQL, MariaDB and SQLite, with the re-add's start at 1 (below what was served) and with
// a start above the held range.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { FencedStore } from '../src/stores/fencing/fenced-store.js';
import { openStore } from '../src/stores/store-registry.js';
import { randomTag } from './support/random-tag.js';
import { recordingLogger, storeTargets } from './support/store-targets.js';

const targets = storeTargets(['postgres', 'mysql', 'sqlite'], 'frond-attack-ra-');

const dataDir = () => mkdtempSync(join(tmpdir(), 'frond-attack-ra-'));

for (const target of targets) {
  describe(`attack: remove and add a tag around a stop, on ${target.name}`, () => {
    for (const start of [1n, 15n, 500n]) {
      it(`re-added with start ${start}: nothing twice, no answered ID in a gap, no fence`, async (t) => {
        const url = await target.url(t);
        if (url === undefined) return;
        const tag = randomTag('ra');
        const raw = openStore(url);
        const logger = recordingLogger();
        const served = new Map<bigint, string>();
        const twice: string[] = [];
        const serve = (from: bigint, to: bigint, who: string) => {
          for (let id = from; id < to; id++) {
            if (served.has(id)) twice.push(`${id} by ${served.get(id)} and ${who}`);
            served.set(id, who);
          }
        };
        const dirA = dataDir();
        const opened: { close(): Promise<void> }[] = [];
        const track = <T extends { close(): Promise<void> }>(store: T): T => {
          opened.push(store);
          return store;
        };
        try {
          await raw.addTag({ tag, step: 10, start: 1n });
          const a = new FencedStore(track(openStore(url)), {
            dataDir: dirA,
            fenceSkip: 1_000_000,
            node: 'a:1',
            logger,
          });
          const first = await a.advance(tag); // [1, 11)
          const second = await a.advance(tag); // [11, 21)
          assert.ok(first && second);
          serve(1n, 4n, 'a');
          await raw.removeTag(tag);
          await raw.addTag({ tag, step: 10, start });
          await a.handBack(
            tag,
            [
              { start: 4n, end: 11n, reason: 'unsafe_hand_back' },
              { start: 11n, end: 21n, reason: 'unsafe_hand_back' },
            ],
            21n,
          );
          const b = new FencedStore(track(openStore(url)), {
            dataDir: dataDir(),
            fenceSkip: 1_000_000,
            node: 'b:1',
            logger,
          });
          for (let i = 0; i < 3; i++) {
            const got = await b.advance(tag);
            assert.ok(got);
            serve(got.maxId - BigInt(got.step), got.maxId, 'b');
          }
          const a2 = new FencedStore(track(openStore(url)), {
            dataDir: dirA,
            fenceSkip: 1_000_000,
            node: 'a:1',
            logger,
          });
          const again = await a2.advance(tag);
          assert.ok(again);
          serve(again.maxId - BigInt(again.step), again.maxId, 'a again');
          const maxId = (await raw.tag(tag))?.maxId as bigint;
          const gaps = await raw.listGaps(tag);
          t.diagnostic(
            `max_id ${maxId}; gaps ${gaps.map((gap) => `[${gap.start}, ${gap.end}) ${gap.reason}`).join(', ') || 'none'}; served ${[...served.keys()].length}`,
          );
          assert.deepEqual(twice.slice(0, 4), [], 'no ID twice');
          assert.ok(
            !logger.events.some((event) => event === 'segment.fenced'),
            `no fence: ${logger.events.filter((e) => e.startsWith('segment.fence')).join(', ')}`,
          );
          for (const gap of gaps)
            for (let id = gap.start; id < gap.end; id++)
              assert.ok(
                !(served.has(id) && served.get(id) !== 'a'),
                `${id} served by ${served.get(id)} and in a ${gap.reason} gap`,
              );
        } finally {
          await Promise.all(opened.map((store) => store.close()));
          await raw.close();
        }
      });
    }
  });
}
