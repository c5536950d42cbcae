import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import {
  README_TABLE_BEGIN as BEGIN,
  README_TABLE_END as END,
  overviewHelp,
  readmeTable,
} from '../src/cli/help.js';
import { SERVE_OPTIONS } from '../src/cli/option-table.js';
import { ERROR_CODES, type FrondErrorCode } from '../src/core/errors.js';
import { HTTP_STATUS } from '../src/server/http/http-status.js';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe('README', () => {
  it('tells load balancers to check /readyz, never /healthz, in every document and in frond help', () => {
    const docs = ['README.md', 'docs/databases.md', 'docs/worker-ids.md', 'docs/architecture.md'];
    for (const doc of docs) {
      const text = readFileSync(new URL(`../${doc}`, import.meta.url), 'utf8');
      for (const paragraph of text.split(/\n\s*\n|\n- /)) {
        if (!/load balancer|health check/i.test(paragraph) || /^#/.test(paragraph.trim())) continue;
        assert.match(paragraph, /\/readyz/, `${doc}: ${paragraph.slice(0, 120)}`);
        const healthz = /\/healthz[^.]*\./.exec(paragraph)?.[0] ?? '';
        if (healthz !== '') assert.match(healthz, /liveness/, `${doc}: ${healthz}`);
      }
    }
    assert.match(overviewHelp(), /Load balancers check GET \/readyz/);
  });

  it('documents every error code with the status the server answers', () => {
    for (const code of Object.keys(ERROR_CODES) as FrondErrorCode[]) {
      const row = new RegExp(`^\\| \`${code}\`\\s*\\| (\\d{3})\\s*\\|`, 'm').exec(readme);
      assert.ok(row, `README has no row for error code ${code}`);
      assert.equal(Number(row[1]), HTTP_STATUS[code], `README gives ${code} the wrong status`);
    }
  });

  it("holds frond serve's option table as src/cli/option-table.ts makes it", () => {
    const from = readme.indexOf(BEGIN);
    const to = readme.indexOf(END);
    assert.ok(from !== -1 && to > from, `README lacks the lines ${BEGIN} and ${END}`);
    assert.equal(
      readme.slice(from + BEGIN.length, to).trim(),
      readmeTable(SERVE_OPTIONS),
      'README is out of step with the option table: node --import tsx scripts/write-readme-options.ts',
    );
  });

  it('names the test command that .ci/run calls', () => {
    const ci = readFileSync(new URL('../.ci/run', import.meta.url), 'utf8');
    assert.match(readme, /^npm test\b/m);
    assert.match(ci, /^npm test$/m);
  });
});
