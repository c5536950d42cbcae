import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { LOCK_FILE, lockDataDir } from '../src/server/start/data-dir-lock.js';

const dataDir = () => mkdtempSync(join(tmpdir(), 'frond-lock-'));

/** The pid of a process that has ended (pids are reused only after the counter wraps). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', '']);
  assert.equal(typeof child.pid, 'number');
  return child.pid as number;
}

const NONCE = '0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0';

describe('lockDataDir', () => {
  it('takes a free dir and releases it on close', () => {
    const dir = dataDir();
    const unlock = lockDataDir(dir);
    assert.match(
      readFileSync(join(dir, LOCK_FILE), 'utf8'),
      new RegExp(`^${process.pid}\\n[0-9a-f-]{36}\\n$`),
    );
    unlock();
    assert.equal(existsSync(join(dir, LOCK_FILE)), false);
    assert.deepEqual(readdirSync(dir), [], 'no temporary file left');
  });

  it('refuses a dir held by a live process, naming it, and leaves its file alone', () => {
    const dir = dataDir();
    const text = `${process.ppid}\n${NONCE}\n`;
    writeFileSync(join(dir, LOCK_FILE), text);
    assert.throws(
      () => lockDataDir(dir),
      (error: Error & { code?: string }) =>
        error.code === 'INVALID_CONFIG' && error.message.includes(`in use by process ${process.ppid}`),
    );
    assert.equal(readFileSync(join(dir, LOCK_FILE), 'utf8'), text);
    assert.deepEqual(readdirSync(dir), [LOCK_FILE]);
  });

  it('takes over a file left by a crash, in the old format and the new; a release leaves a file taken over from it', () => {
    for (const stale of [`${deadPid()}\n`, `${deadPid()}\n${NONCE}\n`, '']) {
      const dir = dataDir();
      writeFileSync(join(dir, LOCK_FILE), stale);
      const unlock = lockDataDir(dir);
      const mine = readFileSync(join(dir, LOCK_FILE), 'utf8');
      assert.ok(mine.startsWith(`${process.pid}\n`));
      // Taken over by a later start (this process's own pid counts as stale: a container restart).
      const again = lockDataDir(dir);
      unlock();
      assert.notEqual(readFileSync(join(dir, LOCK_FILE), 'utf8'), mine);
      again();
      assert.deepEqual(readdirSync(dir), []);
    }
  });

  it('finishes a take-over that crashed halfway, and clears what crashed starts left', () => {
    const dir = dataDir();
    const dead = deadPid();
    // A start crashed holding the claim for the stale file; another crashed after its rename.
    writeFileSync(join(dir, LOCK_FILE), `${dead}\n${NONCE}\n`);
    writeFileSync(
      join(dir, `${LOCK_FILE}.takeover-${NONCE}`),
      `${dead}\n1a2b3c4d-0000-4000-8000-000000000000\n`,
    );
    writeFileSync(
      join(dir, `${LOCK_FILE}.takeover-2a2b3c4d-0000-4000-8000-000000000000`),
      `${dead}\n3a2b3c4d-0000-4000-8000-000000000000\n`,
    );
    writeFileSync(join(dir, `${LOCK_FILE}.${dead}.4a2b3c4d-0000-4000-8000-000000000000.tmp`), 'x');
    writeFileSync(join(dir, `${LOCK_FILE}.${process.ppid}.5a2b3c4d-0000-4000-8000-000000000000.tmp`), 'x');
    const unlock = lockDataDir(dir);
    assert.ok(readFileSync(join(dir, LOCK_FILE), 'utf8').startsWith(`${process.pid}\n`));
    assert.deepEqual(readdirSync(dir).sort(), [
      LOCK_FILE,
      `${LOCK_FILE}.${process.ppid}.5a2b3c4d-0000-4000-8000-000000000000.tmp`,
    ]);
    unlock();
  });
});

/**
 * A process that takes the lock when told: `{ dir, at }` → it spins until the clock reads `at` (so
 * all try within about a millisecond), tries, and answers `{ won }` or `{ error }`; `release`
 * releases what it holds.
 */
const CHILD = `
const { lockDataDir } = await import(${JSON.stringify(pathToFileURL(join(import.meta.dirname, '../src/server/start/data-dir-lock.ts')).href)});
let unlock;
process.on('message', (message) => {
  if (message === 'release') {
    unlock?.();
    unlock = undefined;
    process.send('released');
    return;
  }
  while (Date.now() < message.at) {}
  try {
    unlock = lockDataDir(message.dir);
    process.send({ won: true });
  } catch (error) {
    process.send({ error: error.message });
  }
});
process.on('disconnect', () => process.exit(0));
process.send('ready');
`;

describe('lockDataDir under a race', () => {
  const CHILDREN = 8;
  const ROUNDS = 30;
  let children: ChildProcess[] = [];

  const next = (child: ChildProcess): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`child ${child.pid} did not answer in 20 s`)), 20_000);
      child.once('message', (message) => {
        clearTimeout(timer);
        resolve(message);
      });
    });

  before(async () => {
    children = Array.from({ length: CHILDREN }, () =>
      spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CHILD], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      }),
    );
    await Promise.all(children.map(next));
  });

  after(() => {
    for (const child of children) if (child.connected) child.disconnect();
  });

  it(`lets exactly one of ${CHILDREN} processes started at the same moment take a dir with a stale pid file, ${ROUNDS} times`, async () => {
    const dead = deadPid();
    for (let round = 0; round < ROUNDS; round++) {
      const dir = dataDir();
      // Old format, new format, and (every third round) no file at all.
      if (round % 3 === 0) writeFileSync(join(dir, LOCK_FILE), `${dead}\n`);
      else if (round % 3 === 1) writeFileSync(join(dir, LOCK_FILE), `${dead}\n${NONCE}\n`);
      const at = Date.now() + 100;
      const answers = await Promise.all(
        children.map((child) => {
          const answer = next(child);
          child.send({ dir, at });
          return answer as Promise<{ won?: true; error?: string }>;
        }),
      );
      const winners = children.filter((_, i) => answers[i]?.won === true);
      assert.equal(winners.length, 1, `round ${round}: ${JSON.stringify(answers)}`);
      const winner = winners[0] as ChildProcess;
      for (const answer of answers) {
        if (answer.won) continue;
        assert.match(answer.error ?? '', new RegExp(`is in use by process ${winner.pid};`), `round ${round}`);
      }
      assert.ok(readFileSync(join(dir, LOCK_FILE), 'utf8').startsWith(`${winner.pid}\n`));
      await Promise.all(
        children.map((child) => {
          const answer = next(child);
          child.send('release');
          return answer;
        }),
      );
      assert.deepEqual(readdirSync(dir), [], `round ${round}: the dir is left empty`);
    }
  });
});
