// The README's first steps, as a newcomer takes them: in a fresh copy of the repository (what a
// clone holds), `npm install && npm start`, then the README's commands against the node, each
// answer checked against the comment the README gives it.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freshCopy, freshFolders, readmeBlock, runLine, serve } from './support/readme-install.js';

describe("the README's install steps: from a clone", () => {
  const { work, env } = freshFolders('frond-readme-clone-', { before, after });

  it("npm install && npm start, then the README's commands against it", { timeout: 280_000 }, async (t) => {
    const clone = join(work, 'frond');
    await freshCopy(clone);
    const [start, test] = readmeBlock('clone');
    assert.equal(start?.command, 'npm install && npm start');
    assert.equal(test?.command, 'npm test'); // CI runs it (.ci/run); test/readme.test.ts checks that
    const started = Date.now();
    await runLine({ command: 'npm install', comment: '' }, clone, env(), 200_000);
    t.diagnostic(`npm install in a fresh copy: ${Date.now() - started} ms`);
    const node = await serve('npm start', clone, env(), 60_000);
    try {
      for (const line of readmeBlock('try')) {
        const command = line.command.replaceAll('http://127.0.0.1:8080', node.url);
        await runLine({ ...line, command }, clone, env(), 60_000);
      }
    } finally {
      await node.stop();
    }
  });
});
