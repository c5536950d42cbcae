import { randomBytes } from 'node:crypto';

/** A fresh tag per test, so tests share a database without cleaning up after each other. */
export function randomTag(prefix = 't'): string {
  return `${prefix}-${randomBytes(6).toString('hex')}`;
}
