// The README's install from a git URL: npm clones the repository, installs its development
// dependencies, builds it (prepare) and installs the package it packs. The URL is a local git
// repository made from a fresh copy, since frond has no public one yet.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runNode } from './support/frond-process.js';
import { freshCopy, freshFolders, readmeBlock, run, runLine, VERSION } from './support/readme-install.js';

describe("the README's install steps: from a git URL", () => {
  const { work, env } = freshFolders('frond-readme-git-', { before, after });

  it('npm installs and builds the server from a git URL', { timeout: 295_000 }, async (t) => {
    const repository = join(work, 'frond');
    await freshCopy(repository);
    const git = (args: string[]) =>
      run('git', ['-c', 'user.name=test', '-c', 'user.email=test@localhost', ...args], { cwd: repository });
    await git(['init', '-q']);
    await git(['add', '-A']);
    await git(['commit', '-q', '-m', 'frond']);
    const app = join(work, 'my-app');
    mkdirSync(app);
    await runLine({ command: 'npm init -y', comment: '' }, app, env(), 60_000);
    const [install, ...rest] = readmeBlock('git');
    assert.deepEqual(rest, [], 'the block is the one install command');
    const command = (install?.command ?? '').replace(/git\+https:\/\/\S+/, `git+file://${repository}`);
    assert.notEqual(command, install?.command, 'the README installs from a git+https URL');
    const started = Date.now();
    await runLine({ command, comment: '' }, app, env(), 280_000);
    t.diagnostic(`npm install from a git URL: ${Date.now() - started} ms`);
    const frond = join(app, 'node_modules/.bin/frond');
    assert.equal((await runNode([frond, 'version'], { timeoutMs: 30_000 })).stdout.trim(), VERSION);
    // A tag in a SQLite file: better-sqlite3's binary loads in the installed package. The tag
    // commands never make a store: `db init` does.
    const data = ['--data-dir', join(work, 'data')];
    const created = await runNode([frond, 'db', 'init', ...data], { timeoutMs: 30_000 });
    assert.equal(created.code, 0, created.stderr);
    const added = await runNode([frond, 'tag', 'add', 'order', ...data], { timeoutMs: 30_000 });
    assert.equal(added.code, 0, added.stderr);
  });
});
