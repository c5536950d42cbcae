// Attack: a node's clean stop right after another node fenced the database (a failover's fence,
// `frond db fence`): its tail must not go back under the fence's raise (it is an
// unsafe_hand_back gap), the fence's skip is a fence gap, its restart must not fence again, and
// nothing is answered twice. Then the same with the stop racing the fence (both at once, 12
// rounds). PostgreSQL, MariaDB, SQLite.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { HandBackResult } from '../src/core/id-gaps.js';
import { FencedStore } from '../src/stores/fencing/fenced-store.js';
import { openStore } from '../src/stores/store-registry.js';
import { randomTag } from './support/random-tag.js';
import { recordingLogger, storeTargets } from './support/store-targets.js';

const SKIP = 1_000;
const targets = storeTargets(['postgres', 'mysql', 'sqlite'], 'frond-attack-af-');

const dataDir = () => mkdtempSync(join(tmpdir(), 'frond-attack-af-'));

for (const target of targets) {
  describe(`attack: a stop right after, or racing, another node's fence, on ${target.name}`, () => {
    it('12 rounds: the tail never goes back under a fence, nothing twice, no fence at the restart', async (t) => {
      const url = await target.url(t);
      if (url === undefined) return;
      const raw = openStore(url);
      const fencer = openStore(url);
      const served = new Map<bigint, string>();
      const twice: string[] = [];
      const serve = (from: bigint, to: bigint, who: string) => {
        for (let id = from; id < to; id++) {
          if (served.has(id)) twice.push(`${id} by ${served.get(id)} and ${who}`);
          served.set(id, who);
        }
      };
      const tag = randomTag('af');
      let returned = 0;
      try {
        await raw.addTag({ tag, step: 10, start: 1n });
        const dir = dataDir();
        for (let round = 0; round < 12; round++) {
          const logger = recordingLogger();
          const node: FencedStore = new FencedStore(openStore(url), {
            dataDir: dir,
            fenceSkip: SKIP,
            node: 'a:1',
            logger,
          });
          const current = await node.advance(tag);
          const next = await node.advance(tag);
          assert.ok(current && next);
          const start = current.maxId - BigInt(current.step);
          serve(start, start + 3n, `a round ${round}`);
          // The other node's fence: before the stop (even rounds) or at the same time (odd).
          const fence = async () => {
            const seen = await fencer.advance(tag);
            const epoch = seen?.epoch ?? 0;
            await fencer.fence({
              observedEpoch: epoch,
              aboveEpoch: epoch,
              skip: BigInt(SKIP),
              atLeast: new Map(),
            });
          };
          const stop = (): Promise<HandBackResult> =>
            node.handBack(
              tag,
              [
                { start: start + 3n, end: current.maxId, reason: 'unsafe_hand_back' },
                { start: next.maxId - BigInt(next.step), end: next.maxId, reason: 'unsafe_hand_back' },
              ],
              next.maxId,
            );
          if (round % 2 === 0) {
            await fence();
            const result = await stop();
            assert.equal(result.returned, undefined, `round ${round}: nothing goes back under a fence`);
          } else {
            const [result] = await Promise.all([stop(), fence()]);
            if (result.returned !== undefined) returned++;
          }
          const fenced = logger.events.filter((event) => event === 'segment.fenced');
          assert.deepEqual(fenced, [], `round ${round}: the stopping node did not fence`);
          await node.close();
        }
        // The last start of the node, and a grant: no fence, no ID twice.
        const logger = recordingLogger();
        const last = new FencedStore(openStore(url), {
          dataDir: dataDir(),
          fenceSkip: SKIP,
          node: 'c:1',
          logger,
        });
        const got = await last.advance(tag);
        assert.ok(got);
        serve(got.maxId - BigInt(got.step), got.maxId, 'c');
        await last.close();
        const gaps = await raw.listGaps(tag);
        const both: string[] = [];
        for (const gap of gaps)
          for (let id = gap.start; id < gap.end && id < gap.start + 100_000n; id++)
            if (served.has(id))
              both.push(`${id} (${served.get(id)}) in ${gap.reason} gap [${gap.start}, ${gap.end})`);
        const maxId = (await raw.tag(tag))?.maxId as bigint;
        const lost: bigint[] = [];
        for (let id = 1n; id < maxId; id++)
          if (!served.has(id) && !gaps.some((gap) => gap.start <= id && id < gap.end)) lost.push(id);
        t.diagnostic(`max_id ${maxId}, ${gaps.length} gaps, ${returned} of 6 racing stops handed back`);
        assert.deepEqual(twice.slice(0, 4), [], 'no ID twice');
        assert.deepEqual(both.slice(0, 4), [], 'no answered ID in a gap');
        // The fencer's own probes (one advance a round) took segments it never served: those are
        // its, not the stopping node's; only what neither holds may be missing.
        t.diagnostic(
          `${lost.length} IDs neither served nor in a gap (the fencer's probe segments: 12 x 10 at most)`,
        );
        assert.ok(lost.length <= 120, `${lost.length} IDs unaccounted`);
      } finally {
        await Promise.all([raw.close(), fencer.close()]);
      }
    });
  });
}
