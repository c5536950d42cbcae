// The README's three formatted tags, run as written: its curl lines (block `install-test: formats`)
// against a real `frond serve` whose clock libfaketime puts on 1 December 2026, each answer compared
// with what its comment says; then the clock on 1 January 2027 for the ticket's new year.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { clockAt, ms } from './support/formatted-tags.js';
import { runFrond, startFrond, tempDir } from './support/frond-process.js';
import { readmeBlock, run } from './support/readme-install.js';

const README_URL = 'http://127.0.0.1:8080';

describe("the README's formatted tags (libfaketime)", () => {
  it('answers what the comments say, on 1 December 2026 and from 1 January 2027', async (t) => {
    // Noon in Shanghai, 04:00 UTC: 1 December in both zones.
    const clock = clockAt(t, ms('2026-12-01T04:00:00Z'));
    if (clock === undefined) return;
    const store = `sqlite:${join(tempDir('frond-formats-'), 'readme.db')}`;
    const init = await runFrond(['db', 'init', '--store', store]);
    assert.equal(init.code, 0, init.stderr);
    const args = ['--port', '0', '--data-dir', tempDir('frond-node-'), '--no-snowflake', '--store', store];
    const node = await startFrond(args, { env: clock.env });
    t.after(() => node.stop('SIGKILL'));
    const curl = async (command: string) => {
      assert.match(command, /^curl /);
      return (await run('bash', ['-c', command.replaceAll(README_URL, node.url)])).stdout;
    };
    const lines = readmeBlock('formats');
    assert.equal(lines.length, 6, 'three tags, each made and then asked');
    let ticket: { command: string; newYear: string } | undefined;
    for (const { command, comment } of lines) {
      if (comment === '') {
        const made = JSON.parse(await curl(command)) as { tag?: string; error?: unknown };
        assert.equal(made.error, undefined, command);
        continue;
      }
      if (comment.startsWith('{')) {
        assert.deepEqual(JSON.parse(await curl(command)), JSON.parse(comment), command);
        continue;
      }
      // `A, then B` or `A, B, …; from 1 January 2027, C`: the answers in turn, up to the ellipsis.
      const [now = '', later] = comment.split(/;\s*/);
      const answers = now
        .split(/,\s*/)
        .map((answer) => answer.replace(/^then /, ''))
        .filter((answer) => answer !== '…');
      for (const answer of answers) assert.equal(await curl(command), answer, command);
      const newYear = /^from 1 January 2027, (\S+)$/.exec(later ?? '');
      if (newYear) ticket = { command, newYear: newYear[1] as string };
    }
    assert.ok(ticket, "the ticket's comment says what 1 January 2027 answers");
    clock.at(ms('2027-01-01T00:00:01Z'));
    assert.equal(await curl(ticket.command), ticket.newYear);
  });
});
