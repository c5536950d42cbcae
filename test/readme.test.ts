import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { SERVE_OPTIONS } from '../src/cli/serve.js';
import { ERROR_CODES, type FrondErrorCode } from '../src/core/errors.js';
import { HTTP_STATUS } from '../src/server/http-status.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe('README', () => {
  it('documents every error code with the status the server answers', () => {
    for (const code of Object.keys(ERROR_CODES) as FrondErrorCode[]) {
      const row = new RegExp(`^\\| \`${code}\`\\s*\\| (\\d{3})\\s*\\|`, 'm').exec(readme);
      assert.ok(row, `README has no row for error code ${code}`);
      assert.equal(Number(row[1]), HTTP_STATUS[code], `README gives ${code} the wrong status`);
    }
  });

  it('documents every flag of frond serve in its configuration table', () => {
    for (const flag of Object.keys(SERVE_OPTIONS)) {
      assert.match(readme, new RegExp(`^\\| [^|]*\`--${flag}\``, 'm'), `README's table lacks --${flag}`);
    }
  });

  it('names the test command that .ci/run calls', () => {
    const ci = readFileSync(new URL('../.ci/run', import.meta.url), 'utf8');
    assert.match(readme, /^npm test\b/m);
    assert.match(ci, /^npm test$/m);
  });
});
