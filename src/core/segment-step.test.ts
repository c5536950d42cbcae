import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LEAF_STEP_RULES, nextStep, stepsAfterLoad } from './segment-step.js';

const MINUTE = 60_000;

describe('nextStep (Leaf dynamic step)', () => {
  it('doubles the step when a segment lasted under 15 minutes', () => {
    assert.equal(nextStep(1000, 14 * MINUTE, 1000, LEAF_STEP_RULES), 2000);
    assert.equal(nextStep(1000, 0, 1000, LEAF_STEP_RULES), 2000);
  });

  it('keeps the step between 15 and 30 minutes', () => {
    assert.equal(nextStep(4000, 15 * MINUTE, 1000, LEAF_STEP_RULES), 4000);
    assert.equal(nextStep(4000, 30 * MINUTE - 1, 1000, LEAF_STEP_RULES), 4000);
  });

  it("halves the step from 30 minutes on, but not below the table's step", () => {
    assert.equal(nextStep(4000, 30 * MINUTE, 1000, LEAF_STEP_RULES), 2000);
    assert.equal(nextStep(1000, 60 * MINUTE, 1000, LEAF_STEP_RULES), 1000);
    assert.equal(nextStep(1500, 60 * MINUTE, 1000, LEAF_STEP_RULES), 1500);
  });

  it('stops doubling at the last value under the cap, as Leaf: 1,000 grows to 512,000', () => {
    let step = 1000;
    for (let i = 0; i < 30; i++) step = nextStep(step, MINUTE, 1000, LEAF_STEP_RULES);
    assert.equal(step, 512_000);
    assert.equal(nextStep(15_625 * 32, MINUTE, 1000, LEAF_STEP_RULES), 1_000_000);
  });

  it('follows configured bounds', () => {
    const rules = { maxStep: 100, growBelowMs: 1000, shrinkFromMs: 2000 };
    assert.equal(nextStep(50, 999, 10, rules), 100);
    assert.equal(nextStep(100, 999, 10, rules), 100);
    assert.equal(nextStep(100, 1500, 10, rules), 100);
    assert.equal(nextStep(100, 2000, 10, rules), 50);
  });
});

describe('stepsAfterLoad (Leaf SegmentIDGenImpl.updateSegmentFromDb, lines 162-192 at 86a6441)', () => {
  it('keeps the step the load asked for and takes only the floor from the row', () => {
    // Line 191 `buffer.setStep(nextStep)`, line 192 `buffer.setMinStep(leafAlloc.getStep())`.
    assert.deepEqual(stepsAfterLoad({ step: 128, tableStep: 5 }), { step: 128, minStep: 5 });
    assert.deepEqual(stepsAfterLoad({ step: 128, tableStep: 100_000 }), { step: 128, minStep: 100_000 });
  });

  it("keeps the row's step as both on the first two loads, which ask for the row's step", () => {
    // Lines 164-165 and 169-170: `setStep(leafAlloc.getStep())`, `setMinStep(leafAlloc.getStep())`.
    assert.deepEqual(stepsAfterLoad({ step: 10, tableStep: 10 }), { step: 10, minStep: 10 });
  });

  it('then halves a doubled step down to a lowered floor, as line 183', () => {
    let { step, minStep } = stepsAfterLoad({ step: 40, tableStep: 5 });
    const steps: number[] = [];
    for (let i = 0; i < 5; i++) {
      step = nextStep(step, 31 * MINUTE, minStep, LEAF_STEP_RULES);
      ({ step, minStep } = stepsAfterLoad({ step, tableStep: 5 }));
      steps.push(step);
    }
    assert.deepEqual(steps, [20, 10, 5, 5, 5]);
  });
});

describe('a step of 0 set in the row by hand', () => {
  it('never halves the dynamic step to 0: the floor is at least 1', () => {
    const { minStep } = stepsAfterLoad({ step: 8, tableStep: 0 });
    assert.equal(minStep, 1);
    let step = 8;
    for (let i = 0; i < 10; i++)
      step = nextStep(step, LEAF_STEP_RULES.shrinkFromMs, minStep, LEAF_STEP_RULES);
    assert.equal(step, 1);
    assert.equal(nextStep(1, 0, minStep, LEAF_STEP_RULES), 2, 'and it doubles again once traffic comes');
  });
});
