import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { runInThisContext } from 'node:vm';
import ts from 'typescript';
import { runFrond } from '../../../test/support/frond-process.js';
import { type ClientOptions, createClient, type FrondClient, type IdType } from '../src/index.js';
import { type FrondProcess, serve, sharedStore } from './support/servers.js';

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const MARK = '<!-- tested by test/readme.test.ts -->';
/** The server the README's examples name; the test puts its own server's URL there. */
const EXAMPLE_URL = "'http://10.0.0.1:8080'";

/** The `ts` block after MARK. */
function testedBlock(): string {
  const at = README.indexOf(MARK);
  assert.ok(at !== -1, `packages/client/README.md lacks ${MARK}`);
  const block = /```ts\n([\s\S]*?)```/.exec(README.slice(at));
  assert.ok(block, `no ts block after ${MARK}`);
  return block[1] as string;
}

/**
 * The block with each claim in a comment turned into a check: `EXPR; // 'text'` (or a number, or a
 * bigint) compares EXPR with it, `EXPR; // throws TypeError: message` expects that error. Anything
 * after the literal is the reader's explanation.
 */
function withChecks(block: string): { code: string; claims: number } {
  let claims = 0;
  const lines = block.split('\n').map((line) => {
    const found = /^(\s*)(.+?);\s*\/\/ (.+)$/.exec(line);
    if (found === null) return line;
    const [, indent, expr, comment] = found as unknown as [string, string, string, string];
    const thrown = /^throws (\w+): (.+)$/.exec(comment);
    if (thrown !== null) {
      claims++;
      return `${indent}__throws(() => (${expr}), ${JSON.stringify(thrown[1])}, ${JSON.stringify(thrown[2])});`;
    }
    const literal = /^('[^']*'|-?\d+n?)/.exec(comment);
    if (literal === null) return line;
    claims++;
    return `${indent}__equal(${expr}, ${literal[1]});`;
  });
  return { code: lines.join('\n'), claims };
}

describe('packages/client/README.md, "IDs in JSON"', () => {
  const store = sharedStore();
  let server: FrondProcess;
  const clients: FrondClient<unknown>[] = [];

  before(async () => {
    for (const tag of ['invoice', 'receipt']) {
      const added = await runFrond(['tag', 'add', tag, '--store', store, '--start', '9007199254740993']);
      assert.equal(added.code, 0, added.stderr);
    }
    server = await serve(store, 1);
  });

  after(async () => {
    for (const client of clients) client.close();
    await server?.stop();
  });

  it('runs as written, against a real server, and every claim in its comments holds', async () => {
    const { code, claims } = withChecks(testedBlock());
    assert.equal(claims, 5, code);
    const js = ts.transpileModule(
      `(async (ids, createClient, __equal, __throws) => {\n${code.replaceAll(EXAMPLE_URL, JSON.stringify(server.url))}\n})`,
      { compilerOptions: { target: ts.ScriptTarget.ES2022 } },
    ).outputText;
    const run = runInThisContext(js) as (...args: unknown[]) => Promise<void>;
    const made = <T extends IdType>(options: ClientOptions<T>) => {
      const client = createClient(options);
      clients.push(client);
      return client;
    };
    let checked = 0;
    await run(
      made({ urls: [server.url] }),
      made,
      (actual: unknown, expected: unknown) => {
        checked++;
        assert.deepEqual(actual, expected);
      },
      (call: () => unknown, name: string, message: string) => {
        checked++;
        assert.throws(call, (error: Error) => error.name === name && error.message === message);
      },
    );
    assert.equal(checked, claims);
  });
});
