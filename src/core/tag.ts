import { FrondError } from './errors.js';

/** Leaf's biz_tag is varchar(128); frond also limits the characters so a tag is safe in a URL path. */
export const TAG_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

export function assertValidTag(tag: string): string {
  if (!TAG_PATTERN.test(tag)) {
    throw new FrondError(
      'INVALID_TAG',
      `invalid tag ${JSON.stringify(tag.length > 140 ? `${tag.slice(0, 140)}…` : tag)}: use 1 to 128 characters of A-Z a-z 0-9 . _ : -`,
    );
  }
  return tag;
}

/** Leaf's step column is int(11); frond keeps steps to positive 32-bit integers. */
export const MAX_TABLE_STEP = 2_147_483_647;

export function assertStep(step: number): number {
  if (!Number.isSafeInteger(step) || step < 1 || step > MAX_TABLE_STEP) {
    throw new FrondError(
      'INVALID_ARGUMENT',
      `invalid step ${step}: use an integer from 1 to ${MAX_TABLE_STEP}`,
    );
  }
  return step;
}
