// The README's steps for a project of one's own: the clone packs both packages into tarballs, a
// fresh project installs them with npm (install scripts and all), runs the installed `frond serve`,
// and the README's client code takes IDs from it through the installed `@frond/client`.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runNode } from './support/frond-process.js';
import { httpGet } from './support/http-get.js';
import {
  freshCopy,
  freshFolders,
  ROOT,
  readmeBlock,
  readmeBlockText,
  runLine,
  SERVES,
  serve,
  VERSION,
} from './support/readme-install.js';

describe("the README's install steps: into a project, from tarballs", () => {
  const { work, env } = freshFolders('frond-readme-tarballs-', { before, after });

  it('packs both packages, installs them in a fresh project, serves IDs to the installed client', {
    timeout: 295_000,
  }, async (t) => {
    // The clone after `npm install`: a fresh copy with this repository's installed dependencies
    // (test/readme-install-clone.test.ts runs that install itself). `npm pack` then builds in the
    // copy (prepack), never in this repository, whose dist/ other tests use.
    const clone = join(work, 'frond');
    await freshCopy(clone);
    symlinkSync(join(ROOT, 'node_modules'), join(clone, 'node_modules'));
    const packages = join(work, 'packages');
    const at = (command: string) => command.replaceAll('/tmp/frond-packages', packages);
    let started = Date.now();
    for (const line of readmeBlock('pack'))
      await runLine({ ...line, command: at(line.command) }, clone, env(), 200_000);
    t.diagnostic(`npm pack of both packages: ${Date.now() - started} ms`);
    assert.deepEqual(readdirSync(packages).sort(), [`frond-${VERSION}.tgz`, `frond-client-${VERSION}.tgz`]);

    const app = join(work, 'my-app');
    mkdirSync(app);
    const lines = readmeBlock('project');
    const last = lines.pop();
    assert.match(last?.command ?? '', SERVES, 'the block ends with the command that serves');
    started = Date.now();
    for (const line of lines) await runLine({ ...line, command: at(line.command) }, app, env(), 200_000);
    t.diagnostic(`the project's steps before serving: ${Date.now() - started} ms`);
    assert.ok(existsSync(join(app, 'node_modules/.bin/frond')), 'npm linked the frond executable');
    assert.ok(!existsSync(join(app, 'node_modules/typescript')), 'no development dependency came along');
    const node = await serve(last?.command as string, app, env(), 60_000);
    try {
      assert.equal((await httpGet(`${node.url}/api/segment/get/order`)).body, '1');
      // The README's client code, as a module of the project, against this node.
      writeFileSync(
        join(app, 'app.mjs'),
        readmeBlockText('client').replaceAll('http://127.0.0.1:8080', node.url),
      );
      const taken = await runNode([join(app, 'app.mjs')], { timeoutMs: 30_000 });
      assert.equal(taken.code, 0, taken.stderr);
      assert.match(
        taken.stdout.trim(),
        /^2n [1-9]\d{15,18}n$/,
        'the client took a segment ID and a snowflake ID',
      );
    } finally {
      await node.stop();
    }
  });
});
