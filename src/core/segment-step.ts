/** Leaf's dynamic step, with Leaf's constants as defaults. */
export interface StepRules {
  /** Upper bound of the dynamic step. Leaf: 1,000,000. */
  maxStep: number;
  /** A segment used up faster than this doubles the step. Leaf: 15 minutes. */
  growBelowMs: number;
  /** A segment that lasted this long or longer halves the step. Leaf: 30 minutes. */
  shrinkFromMs: number;
}

export const LEAF_STEP_RULES: StepRules = {
  maxStep: 1_000_000,
  growBelowMs: 15 * 60_000,
  shrinkFromMs: 30 * 60_000,
};

/**
 * The step of the next load, from the current step and the time since the previous load (about the
 * time one segment lasted, since loads start when 10% of a segment is used). As in Leaf, doubling
 * stops at the last value under the cap: from 1,000 the step grows to 512,000, not 1,000,000.
 */
export function nextStep(
  current: number,
  sinceLastLoadMs: number,
  minStep: number,
  rules: StepRules,
): number {
  if (sinceLastLoadMs < rules.growBelowMs) {
    return current * 2 <= rules.maxStep ? current * 2 : current;
  }
  if (sinceLastLoadMs < rules.shrinkFromMs) return current;
  const half = Math.floor(current / 2);
  return half >= Math.max(1, minStep) ? half : current;
}

/**
 * The dynamic step and its floor after a load that was granted `step` IDs from a row whose step is
 * `tableStep`, as Leaf's SegmentIDGenImpl.updateSegmentFromDb leaves them
 * (leaf-core/src/main/java/com/sankuai/inf/leaf/segment/SegmentIDGenImpl.java in
 * Meituan-Dianping/Leaf at 86a6441): loads 1 and 2 ask for the row's step and keep it as both
 * (lines 164-165 and 169-170, `setStep(leafAlloc.getStep())`, `setMinStep(leafAlloc.getStep())`);
 * every later load keeps the step it asked for and takes only the floor from the row (lines
 * 191-192, `setStep(nextStep)`, `setMinStep(leafAlloc.getStep())`). So a step changed in the table
 * by hand moves a running node's floor, not its step: from a dynamic step of 64, a row set to 5
 * goes on 128, 256, … while traffic lasts, and halves down to 5 once it slows.
 */
export function stepsAfterLoad(granted: { step: number; tableStep: number }): {
  step: number;
  minStep: number;
} {
  // A floor of at least 1: a row's step set to 0 (or below) by hand made the floor 0, the step then
  // halved 1 → 0 on a slow tag, and a step of 0 never doubles back: the tag stayed unservable
  // until a restart, even after the row was set right.
  return { step: granted.step, minStep: Math.max(1, granted.tableStep) };
}
