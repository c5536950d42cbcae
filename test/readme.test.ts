import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
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

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');
const readme = read('README.md');
/** Every page of the documentation: the README, docs/ and its deploy recipes, the SDK's README. */
const DOCS = [
  'README.md',
  ...readdirSync(new URL('../docs', import.meta.url))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
  'docs/deploy/README.md',
  'packages/client/README.md',
];

describe('README', () => {
  it('tells load balancers to check /readyz, never /healthz, in every document and in frond help', () => {
    for (const doc of DOCS) {
      const text = read(doc);
      for (const paragraph of text.split(/\n\s*\n|\n- /)) {
        if (!/load balancer|health check/i.test(paragraph) || /^#/.test(paragraph.trim())) continue;
        assert.match(paragraph, /\/readyz/, `${doc}: ${paragraph.slice(0, 120)}`);
        const healthz = /\/healthz[^.]*\./.exec(paragraph)?.[0] ?? '';
        if (healthz !== '') assert.match(healthz, /liveness/, `${doc}: ${healthz}`);
      }
    }
    assert.match(overviewHelp(), /Load balancers check GET \/readyz/);
  });

  it('documents every error code with the status the server answers, in docs/api.md', () => {
    const api = read('docs/api.md');
    for (const code of Object.keys(ERROR_CODES) as FrondErrorCode[]) {
      const row = new RegExp(`^\\| \`${code}\`\\s*\\| (\\d{3})\\s*\\|`, 'm').exec(api);
      assert.ok(row, `docs/api.md has no row for error code ${code}`);
      assert.equal(Number(row[1]), HTTP_STATUS[code], `docs/api.md gives ${code} the wrong status`);
    }
    assert.match(readme, /\(docs\/api\.md#errors\)/, 'the README points to the error table');
  });

  it("holds frond serve's option table in docs/configuration.md, as src/cli/option-table.ts makes it", () => {
    const configuration = read('docs/configuration.md');
    const from = configuration.indexOf(BEGIN);
    const to = configuration.indexOf(END);
    assert.ok(from !== -1 && to > from, `docs/configuration.md lacks the lines ${BEGIN} and ${END}`);
    assert.equal(
      configuration.slice(from + BEGIN.length, to).trim(),
      readmeTable(SERVE_OPTIONS),
      'docs/configuration.md is out of step with the option table: node --import tsx scripts/write-readme-options.ts',
    );
    for (const doc of DOCS.filter((path) => path !== 'docs/configuration.md'))
      assert.ok(
        !read(doc).includes(BEGIN),
        `${doc} holds a copy of the option table: link docs/configuration.md`,
      );
  });

  it('names the test command that .ci/run calls', () => {
    const ci = readFileSync(new URL('../.ci/run', import.meta.url), 'utf8');
    assert.match(readme, /^npm test\b/m);
    assert.match(ci, /^npm test$/m);
  });
});
