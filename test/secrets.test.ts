import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { type FrondProcess, runFrond, startFrond, tempDir } from './support/frond-process.js';
import { randomTag } from './support/random-tag.js';
import { testDatabase } from './support/test-database.js';

// Issue 16 item 8: a store password with `@`, `/`, `:`, `%`, `#` or `?` is never printed, whole or
// in part, by real `frond serve` and `frond tag` processes: start-up errors, log lines, pages.

/** The password as typed, and its parts: no output may hold any of them. */
const RAW = 'Sx9k@Pw7/Qz3:Rm5%Tn2#Vb8?Lj4';
const PARTS = RAW.split(/[@/:%#?]/);
const ENCODED = encodeURIComponent(RAW);

function assertHidden(text: string, where: string): void {
  for (const part of PARTS)
    assert.ok(!text.includes(part), `${where} shows ${part} of the password:\n${text}`);
}

async function pages(node: FrondProcess): Promise<string> {
  const texts: string[] = [];
  for (const path of [
    '/healthz',
    '/readyz',
    '/v1/stats',
    '/metrics',
    '/db',
    '/cache',
    '/dashboard',
    '/v1/tags',
  ]) {
    const response = await fetch(`${node.url}${path}`);
    texts.push(`${path} ${response.status}\n${await response.text()}`);
  }
  return texts.join('\n');
}

/** A node that starts (the store is checked on use); its pages and log lines a moment later. */
async function servedOutput(args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
  const node = await startFrond(['--port', '0', '--data-dir', tempDir(), ...args], { env });
  try {
    // The first load and the tag refresh fail and are logged.
    await fetch(`${node.url}/api/segment/get/x`).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 500));
    return `${await pages(node)}\n${node.logs.join('\n')}\n${node.stderr.join('\n')}`;
  } finally {
    await node.stop();
  }
}

describe('store passwords are never shown (issue 16 item 8)', () => {
  it('a password typed without percent-encoding: start-up errors of serve, tag list and db init hide it', async () => {
    for (const scheme of ['postgres', 'postgresql', 'mysql', 'oracle']) {
      const store = `${scheme}://frond:${RAW}@127.0.0.1:1/ids`;
      for (const args of [
        ['serve', '--port', '0', '--data-dir', tempDir(), '--store', store],
        ['tag', 'list', '--store', store],
        ['tag', 'add', 'x', '--store', store],
        ['db', 'init', '--store', store],
      ]) {
        const result = await runFrond(args);
        assert.equal(result.code, 2, `${args.join(' ')}: ${result.stdout}${result.stderr}`);
        assertHidden(result.stdout + result.stderr, `frond ${args.slice(0, 2).join(' ')} ${scheme}`);
        assert.match(result.stderr, /\*\*\*/);
      }
    }
    // The same URL through FROND_STORE and a config file.
    const viaEnv = await runFrond(['tag', 'list'], {
      env: { FROND_STORE: `mysql://frond:${RAW}@127.0.0.1:1/ids` },
    });
    assert.equal(viaEnv.code, 2);
    assertHidden(viaEnv.stdout + viaEnv.stderr, 'FROND_STORE');
    const config = join(tempDir(), 'frond.json');
    writeFileSync(config, JSON.stringify({ store: `postgres://frond:${RAW}@127.0.0.1:1/ids` }));
    const viaFile = await runFrond(['serve', '--port', '0', '--data-dir', tempDir(), '--config', config]);
    assert.equal(viaFile.code, 2);
    assertHidden(viaFile.stdout + viaFile.stderr, '--config');
    // A bad percent-encoding in the password is a configuration error naming no part of it.
    const badEscape = await runFrond([
      'tag',
      'list',
      '--store',
      'postgres://frond:Sx9k%zzPw7@127.0.0.1:1/ids',
    ]);
    assert.equal(badEscape.code, 2, badEscape.stderr);
    assert.match(badEscape.stderr, /password has bad percent-encoding/);
    assertHidden(badEscape.stderr, 'a bad escape');
  });

  it("Leaf's leaf.jdbc.url with the password in the URL or in leaf.jdbc.password hides it", async () => {
    const dir = tempDir();
    const inUrl = join(dir, 'in-url.properties');
    writeFileSync(inUrl, `leaf.jdbc.url=jdbc:mysql://frond:${RAW}@127.0.0.1:1/ids\n`);
    const inQuery = join(dir, 'in-query.properties');
    writeFileSync(inQuery, `leaf.jdbc.url=jdbc:mysql://127.0.0.1:1?password=${RAW}&pasword=${RAW}\n`);
    for (const file of [inUrl, inQuery]) {
      const result = await runFrond(['serve', '--port', '0', '--data-dir', tempDir(), '--leaf-config', file]);
      assert.equal(result.code, 2, result.stdout + result.stderr);
      assertHidden(result.stdout + result.stderr, file);
    }
    const separate = join(dir, 'separate.properties');
    writeFileSync(
      separate,
      `leaf.jdbc.url=jdbc:mysql://127.0.0.1:1/ids?pasword=${encodeURIComponent(RAW)}\nleaf.jdbc.username=frond\nleaf.jdbc.password=${RAW}\nleaf.snowflake.enable=false\n`,
    );
    assertHidden(
      await servedOutput(['--host', '127.0.0.1', '--leaf-config', separate]),
      'leaf.jdbc.password',
    );
  });

  it('an unreachable store: log lines, /healthz, /v1/stats, /metrics, /db and the dashboard hide it', async () => {
    for (const scheme of ['postgres', 'mysql']) {
      assertHidden(await servedOutput(['--store', `${scheme}://frond:${ENCODED}@127.0.0.1:1/ids`]), scheme);
    }
  });

  const mysql = testDatabase('mysql');
  const postgres = testDatabase('postgres');
  after(() => Promise.all([mysql.drop(), postgres.drop()]));

  it('a wrong password on MariaDB: the refusal is logged without it', async (t) => {
    const db = await mysql.open(t);
    if (db === undefined) return;
    const store = db.url.replace('root@', `root:${ENCODED}@`);
    const output = await servedOutput(['--store', store]);
    assert.match(output, /Access denied/);
    assertHidden(output, 'a wrong password');
    const listed = await runFrond(['tag', 'list', '--store', store]);
    assert.notEqual(listed.code, 0);
    assertHidden(listed.stdout + listed.stderr, 'frond tag list');
  });

  it('a working store (PostgreSQL, trust): pages and frond tag list hide it; FROND_STORE_FILE passes it', async (t) => {
    const db = await postgres.open(t);
    if (db === undefined) return;
    const store = db.url.replace('postgres@', `postgres:${ENCODED}@`);
    const tag = randomTag();
    const added = await runFrond(['tag', 'add', tag, '--store', store]);
    assert.equal(added.code, 0, added.stderr);
    const output = await servedOutput(['--store', store]);
    assert.match(output, new RegExp(tag));
    assertHidden(output, 'a node on PostgreSQL');
    const listed = await runFrond(['tag', 'list', '--store', store]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, new RegExp(tag));
    assertHidden(listed.stdout + listed.stderr, 'frond tag list');

    // The secret from a file: nothing of it on the command line or in the environment.
    const file = join(tempDir(), 'store-url');
    writeFileSync(file, `${store}\n`, { mode: 0o600 });
    const fromFile = await runFrond(['tag', 'list'], { env: { FROND_STORE_FILE: file } });
    assert.equal(fromFile.code, 0, fromFile.stderr);
    assert.match(fromFile.stdout, new RegExp(tag));
    const node = await startFrond(['--port', '0', '--data-dir', tempDir()], {
      env: { FROND_STORE_FILE: file },
    });
    try {
      assert.equal((await fetch(`${node.url}/api/segment/get/${tag}`)).status, 200);
      assertHidden(node.logs.join('\n'), 'FROND_STORE_FILE');
    } finally {
      await node.stop();
    }
    const both = await runFrond(['tag', 'list'], { env: { FROND_STORE_FILE: file, FROND_STORE: store } });
    assert.equal(both.code, 2);
    assert.match(both.stderr, /set FROND_STORE or FROND_STORE_FILE, not both/);
    const missing = await runFrond(['tag', 'list'], { env: { FROND_STORE_FILE: join(tempDir(), 'none') } });
    assert.equal(missing.code, 2);
    assert.match(
      missing.stderr,
      /^frond: FROND_STORE_FILE=".*none": no such file; give the path of a file holding the value of FROND_STORE$/m,
    );
  });
});
