import { FrondError } from '../../core/errors.js';

/**
 * The answer of a route whose mode the node runs without: MODE_DISABLED names the flag that turned
 * the mode off, so the operator knows what to change.
 */
export function disabled(mode: string, flag: string): FrondError {
  return new FrondError('MODE_DISABLED', `${mode} mode is off on this node (started with ${flag})`);
}
