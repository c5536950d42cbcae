import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ManualClock, settle } from '../../test/support/manual-clock.js';
import { MemoryStore } from '../../test/support/memory-store.js';
import { propertyRuns } from '../../test/support/property-runs.js';
import { silentLogger } from './logger.js';
import { DEFAULT_SEGMENT_BUFFER_OPTIONS, SegmentBuffer, type SegmentId } from './segment-buffer.js';

type Command =
  | { kind: 'take'; node: number; count: number }
  | { kind: 'wait'; node: number; count: number }
  | { kind: 'release' }
  | { kind: 'fail' }
  | { kind: 'time'; ms: number }
  | { kind: 'step'; step: number };

const command: fc.Arbitrary<Command> = fc.oneof(
  fc.record({ kind: fc.constant('take' as const), node: fc.nat(2), count: fc.integer({ min: 1, max: 40 }) }),
  fc.record({ kind: fc.constant('wait' as const), node: fc.nat(2), count: fc.integer({ min: 1, max: 30 }) }),
  fc.record({ kind: fc.constant('release' as const) }),
  fc.record({ kind: fc.constant('fail' as const) }),
  fc.record({ kind: fc.constant('time' as const), ms: fc.integer({ min: 1, max: 40 * 60_000 }) }),
  fc.record({ kind: fc.constant('step' as const), step: fc.integer({ min: 1, max: 50 }) }),
);

describe('SegmentBuffer under any interleaving (fast-check)', () => {
  it('never hands out one ID twice across three nodes, each node strictly increasing, all below max_id', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 30 }),
        fc.array(command, { maxLength: 80 }),
        async (step, commands) => {
          const store = new MemoryStore(true);
          store.rows.set('t', { maxId: 1n, step });
          const clock = new ManualClock();
          const options = { ...DEFAULT_SEGMENT_BUFFER_OPTIONS, segmentWaitMs: 60_000, retryDelayMs: 0 };
          const nodes = [0, 1, 2].map(() => new SegmentBuffer('t', store, clock, options, silentLogger));
          const seen = new Set<SegmentId>();
          const lastOf: SegmentId[] = [-1, -1, -1];
          const waiting: Promise<void>[] = [];
          const record = (node: number, id: SegmentId) => {
            assert.ok(!seen.has(id), `ID ${id} handed out twice`);
            seen.add(id);
            // Synchronous takes and settled waits are recorded in the order the node handed them out.
            assert.ok(id > (lastOf[node] as SegmentId), `node ${node}: ${id} after ${lastOf[node]}`);
            lastOf[node] = id;
          };
          for (const c of commands) {
            if (c.kind === 'take') {
              const buffer = nodes[c.node] as SegmentBuffer;
              for (let i = 0; i < c.count; i++) {
                const id = buffer.tryNext();
                if (id === undefined) break;
                record(c.node, id);
              }
            } else if (c.kind === 'wait') {
              const node = c.node;
              waiting.push(
                (nodes[node] as SegmentBuffer).nextMany(c.count).then(
                  (ids) => {
                    for (const id of ids) {
                      assert.ok(!seen.has(id), `ID ${id} handed out twice`);
                      seen.add(id);
                    }
                  },
                  () => {},
                ),
              );
            } else if (c.kind === 'release') store.release();
            else if (c.kind === 'fail') store.fail();
            else if (c.kind === 'time') await clock.advance(c.ms);
            else await store.setStep('t', c.step);
            await settle();
          }
          // Let everything finish: release every load still waiting, bounded.
          for (let i = 0; i < 500 && store.waiting > 0; i++) {
            store.release();
            await settle();
          }
          await clock.advance(120_000);
          for (let i = 0; i < 500 && store.waiting > 0; i++) {
            store.release();
            await settle();
          }
          await Promise.all(waiting);
          const maxId = Number(store.rows.get('t')?.maxId);
          for (const id of seen) assert.ok(id >= 1 && id < maxId, `ID ${id} outside [1, ${maxId})`);
        },
      ),
      { numRuns: propertyRuns(150) },
    );
  });
});
