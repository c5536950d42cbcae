import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createClient } from '../src/index.js';
import { addTag, duplicatesOf, type FrondProcess, serve, sharedStore } from './support/servers.js';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const WORKER = fileURLToPath(new URL('./support/client-worker.ts', import.meta.url));
const CLOSER = fileURLToPath(new URL('./support/close-worker.ts', import.meta.url));

interface Finished {
  code: number | string;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs a TypeScript script with tsx; kills it after `timeoutMs` (then `code` is 'killed'). */
function runScript(script: string, args: string[], timeoutMs: number): Promise<Finished> {
  const started = Date.now();
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve) => {
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({
        code: killed ? 'killed' : (code ?? signal ?? 'unknown'),
        stdout,
        stderr,
        ms: Date.now() - started,
      });
    });
  });
}

describe('clients in several processes', () => {
  const store = sharedStore();
  let a: FrondProcess;
  let b: FrondProcess;

  before(async () => {
    await Promise.all([addTag(store, 'procs', 100), addTag(store, 'closing', 100)]);
    [a, b] = await Promise.all([serve(store, 3), serve(store, 4)]);
  });

  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
  });

  it('never hands out an ID twice across two child processes and this one, over two servers', async (t) => {
    const count = 30_000;
    const here = createClient({ urls: [b.url, a.url], idType: 'string' });
    const children = [
      runScript(WORKER, [`${a.url},${b.url}`, 'procs', String(count)], 60_000),
      runScript(WORKER, [`${b.url},${a.url}`, 'procs', String(count)], 60_000),
    ];
    const local: string[] = [];
    for (let i = 0; i < 200; i++) local.push(...(await here.nextIds('procs', 100)));
    here.close();
    const finished = await Promise.all(children);
    for (const child of finished) assert.equal(child.code, 0, child.stderr);
    const remote = finished.map((child) => JSON.parse(child.stdout) as string[]);
    for (const ids of remote) assert.equal(ids.length, count);
    const all = [...local, ...remote.flat()];
    t.diagnostic(`${all.length} IDs from 3 processes, ${finished.map((c) => `${c.ms} ms`).join(', ')}`);
    assert.deepEqual(duplicatesOf(all), []);
  });

  it('stops its timers and requests on close: the process exits on its own within seconds', async () => {
    // A server that accepts connections and never answers, and a port where nothing listens.
    const sockets: Socket[] = [];
    const hanging = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    const dead = createServer();
    await new Promise<void>((resolve) => dead.listen(0, '127.0.0.1', resolve));
    const deadPort = (dead.address() as { port: number }).port;
    await new Promise((resolve) => dead.close(resolve));
    try {
      const hangingUrl = `http://127.0.0.1:${(hanging.address() as { port: number }).port}`;
      const result = await runScript(
        CLOSER,
        [hangingUrl, `http://127.0.0.1:${deadPort}`, a.url, 'closing'],
        20_000,
      );
      assert.equal(result.code, 0, `exit ${result.code} after ${result.ms} ms: ${result.stderr}`);
      // 300 ms of waiting inside, plus start-up; a timer left behind would hold it 30–60 s.
      assert.ok(result.ms < 10_000, `${result.ms} ms`);
      const report = JSON.parse(result.stdout) as { outcomes: string[]; afterClose: string };
      assert.deepEqual(report.outcomes.slice(0, 3), ['CLIENT_CLOSED', 'CLIENT_CLOSED', 'CLIENT_CLOSED']);
      assert.ok(['CLIENT_CLOSED', 'resolved'].includes(report.outcomes[3] ?? ''));
      assert.equal(report.afterClose, 'CLIENT_CLOSED');
    } finally {
      for (const socket of sockets) socket.destroy();
      hanging.close();
    }
  });
});
