import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LEAF_STEP_RULES, nextStep } from './segment-step.js';

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
