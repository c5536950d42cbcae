// The documentation stays true: every link and anchor resolves, the README stays short, no page
// speaks of the work that made frond instead of frond, and the facts the code holds as constants
// (ports, defaults, exit codes, limits, SQLite's worker thread) read the same in the docs.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { SERVE_OPTIONS } from '../src/cli/option-table.js';
import { ERROR_CODES } from '../src/core/errors.js';
import { LEAF_EPOCH } from '../src/core/snowflake-layout.js';
import { DEFAULT_TAG_STEP } from '../src/core/tag-catalogue.js';
import { MAX_COUNT, MAX_RANGE_COUNT } from '../src/server/ids/v1-handlers.js';
import { postgresBackend } from '../src/stores/postgres/postgres-backend.js';
import { DEFAULT_FENCE_SKIP } from '../src/stores/segment-primitive.js';
import {
  ADDING,
  ADDING_FORMATTED,
  ADDING_OPAQUE,
  FENCING,
  LISTING,
  REMOVING,
  SERVING,
  SETTING_STEP,
  STORE_TABLES,
  type Use,
} from '../src/stores/sql/table-access.js';

const ROOT = new URL('..', import.meta.url).pathname;
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

function markdownUnder(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { withFileTypes: true }).flatMap((entry) => {
    const path = `${folder}/${entry.name}`;
    if (entry.isDirectory()) return markdownUnder(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}

/** The pages a user reads: the README, everything under docs/, the SDK's README. */
const DOCS = ['README.md', ...markdownUnder('docs'), 'packages/client/README.md'];

/** The README must be read in ten minutes; the reference lives in docs/. */
const README_MAX_LINES = 236;
const README_MAX_BYTES = 16 * 1024;
/** A README table row wider than this wraps on GitHub and in every editor: move it to docs/. */
const README_MAX_ROW = 160;

/** Text outside fenced code blocks, with inline code spans blanked (their text is code, not prose). */
function prose(text: string): string {
  return text
    .replace(/^```[^\n]*\n[\s\S]*?^```$/gm, (block) => block.replace(/[^\n]/g, ' '))
    .replace(/`[^`\n]*`/g, (span) => ' '.repeat(span.length));
}

/** The lines of the fenced code blocks. */
function codeLines(text: string): string[] {
  return [...text.matchAll(/^```[^\n]*\n([\s\S]*?)^```$/gm)].flatMap((match) => (match[1] ?? '').split('\n'));
}

/** GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces to hyphens. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const withoutCode = text.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
  for (const [, heading] of withoutCode.matchAll(/^#{1,6}\s+(.+?)\s*#*$/gm)) {
    const visible = (heading ?? '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/[`*]/g, '');
    const slug = visible
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** Every inline link's target in a page's prose. */
function linksOf(text: string): string[] {
  // Link texts may be code (`[`frond`](…)`): blank code only outside the brackets' targets.
  const withoutBlocks = text.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
  return [...withoutBlocks.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((match) => match[1] as string);
}

describe('documentation', () => {
  it('has every relative link and #anchor of every page resolve', () => {
    const broken: string[] = [];
    for (const doc of DOCS) {
      for (const target of linksOf(read(doc))) {
        if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:: not ours to check offline
        const [path = '', anchor] = target.split('#');
        const file = path === '' ? join(ROOT, doc) : join(ROOT, dirname(doc), decodeURIComponent(path));
        if (!existsSync(file)) {
          broken.push(`${doc}: ${target} (no ${relative(ROOT, file)})`);
          continue;
        }
        if (anchor === undefined) continue;
        if (statSync(file).isDirectory() || !file.endsWith('.md')) {
          broken.push(`${doc}: ${target} (an anchor into a file that is not Markdown)`);
          continue;
        }
        if (!anchorsOf(readFileSync(file, 'utf8')).has(anchor))
          broken.push(`${doc}: ${target} (no heading makes #${anchor})`);
      }
    }
    assert.deepEqual(broken, []);
  });

  it('keeps the README short: a page of what, install, the API at a glance, production, benchmarks, links', () => {
    const readme = read('README.md');
    const lines = readme.split('\n');
    assert.ok(
      lines.length <= README_MAX_LINES,
      `README has ${lines.length} lines; keep it to ${README_MAX_LINES}`,
    );
    const bytes = Buffer.byteLength(readme);
    assert.ok(bytes <= README_MAX_BYTES, `README is ${bytes} B; keep it to ${README_MAX_BYTES}`);
    const wide = lines.filter((line) => line.startsWith('|') && [...line].length > README_MAX_ROW);
    assert.deepEqual(wide, [], `README table rows over ${README_MAX_ROW} characters`);
    for (const heading of [
      'Install',
      'The API at a glance',
      'Running in production',
      'Benchmarks',
      'Documentation',
    ])
      assert.match(readme, new RegExp(`^## ${heading}$`, 'm'), `README has a section "${heading}"`);
    // Every page of docs/ is reachable from the README.
    const linked = new Set(linksOf(readme).map((target) => target.split('#')[0]));
    for (const page of markdownUnder('docs').filter((path) => !path.startsWith('docs/deploy/')))
      assert.ok(linked.has(page), `README links ${page}`);
  });

  it('gives install steps that work today: no registry install until the packages are published', () => {
    for (const doc of ['README.md', 'packages/client/README.md']) {
      const text = read(doc);
      assert.ok(
        /`frond` and `@frond\/client` are not on the npm registry yet/.test(text.replace(/\s+/g, ' ')),
        `${doc} says plainly that the packages are not published`,
      );
      // `npx frond …` in a project that installed the tarball is fine; asking the registry is not.
      const fromRegistry = codeLines(text).filter((line) =>
        /\bnpm (install|i|add)\b[^#\n]*?(\s|^)(-g\s+)?(frond|@frond\/client)(@[\w.-]+)?(\s|$)|\bnpx (-y )?frond\b[^#\n]*#.*without installing/.test(
          line,
        ),
      );
      assert.deepEqual(fromRegistry, [], `${doc} installs from the registry`);
    }
  });

  it('speaks of the product, not of the work that made it', () => {
    const history = [
      /\bissues? #?\d+/i,
      /(^|[^\w&/])#\d+\b/,
      /\bitem \d+\b/i,
      /\b(this|that|the \w+) wave\b/i,
      /\battack (found|showed|left)\b|\bfound by (an )?attack\b|\b(first|second|third) attack\b/i,
      /\bas before\b/i,
      /\b(previous|last|this|next) release\b/i,
      /\bbefore the (fix|change)\b|\bwas fixed\b/i,
    ];
    const found: string[] = [];
    for (const doc of DOCS) {
      // A link to another project's issue (Leaf's) is a reference a reader can follow.
      const text = prose(read(doc)).replace(/\[[^\]]*\]\(https?:[^)]*\)/g, ' ');
      for (const paragraph of text.split(/\n\s*\n/))
        for (const pattern of history) {
          const match = pattern.exec(paragraph.replace(/\s+/g, ' '));
          if (match) found.push(`${doc}: "${match[0].trim()}"`);
        }
    }
    assert.deepEqual(found, []);
  });
});

describe('documentation agrees with the code', () => {
  const option = (flag: string) => {
    const entry = SERVE_OPTIONS.find((candidate) => candidate.flag === flag);
    assert.ok(entry, `no option --${flag}`);
    return entry;
  };
  const number = (text: string) => Number(text.replace(/,/g, ''));

  it('says SQLite runs in a worker thread, as src/stores/sqlite does, and never calls it synchronous without it', () => {
    const store = read('src/stores/sqlite/sqlite-segment-store.ts');
    assert.match(store, /new Worker\(/, 'the SQLite store runs better-sqlite3 in a worker thread');
    assert.ok(existsSync(join(ROOT, 'src/stores/sqlite/sqlite-worker.ts')));
    const wrong: string[] = [];
    for (const doc of DOCS) {
      for (const paragraph of prose(read(doc)).split(/\n\s*\n|\n- /)) {
        const flat = paragraph.replace(/\s+/g, ' ');
        // SQLite's `synchronous = FULL` pragma and PostgreSQL's synchronous_commit are not this.
        const claims = /sqlite/i.test(flat) && /\bsynchronous(ly)?\b(?! = FULL)(?!_)/i.test(flat);
        if (claims && !/worker thread/.test(flat)) wrong.push(`${doc}: ${flat.trim().slice(0, 160)}`);
      }
    }
    assert.deepEqual(wrong, [], 'a paragraph calls SQLite synchronous without its worker thread');
    assert.match(
      read('docs/databases.md').replace(/\s+/g, ' '),
      /SQLite file, .*calls run in a worker thread/,
    );
  });

  it('names the default address and port that frond serve listens on', () => {
    const url = `http://${option('host').default}:${option('port').default}`;
    assert.match(read('README.md'), new RegExp(`serves on ${url.replace(/\./g, '\\.')}\\b`));
    for (const doc of DOCS)
      for (const [found] of read(doc).matchAll(/http:\/\/(127\.0\.0\.1|localhost):\d+/g))
        assert.equal(found.replace('localhost', '127.0.0.1'), url, `${doc}: ${found}`);
  });

  it('gives the default step of a new tag as DEFAULT_TAG_STEP', () => {
    const claims: [string, RegExp][] = [
      ['README.md', /a _segment_, ([\d,]+) by default/],
      ['docs/configuration.md', /frond tag add TAG \[--step (\d+)\]/],
      ['docs/api.md', /step (\d+) as `frond tag add`/],
      ['docs/opaque-ids.md', /segment IDs from 1, step (\d+)/],
    ];
    for (const [doc, pattern] of claims) {
      const match = pattern.exec(read(doc).replace(/\s+/g, ' '));
      assert.ok(match, `${doc} no longer says ${pattern}: update this test with the doc`);
      assert.equal(number(match[1] as string), DEFAULT_TAG_STEP, `${doc}: ${match[0]}`);
    }
  });

  it('gives the fence skip as DEFAULT_FENCE_SKIP', () => {
    const claims: [string, RegExp][] = [
      ['docs/databases.md', /The default, \*\*([\d,]+)\*\*/],
      ['docs/operations.md', /`--fence-skip`, ([\d,]+) by default/],
    ];
    for (const [doc, pattern] of claims) {
      const match = pattern.exec(read(doc).replace(/\s+/g, ' '));
      assert.ok(match, `${doc} no longer says ${pattern}: update this test with the doc`);
      assert.equal(number(match[1] as string), DEFAULT_FENCE_SKIP, `${doc}: ${match[0]}`);
    }
    assert.equal(option('fence-skip').default, DEFAULT_FENCE_SKIP);
  });

  it("gives every default a page states for a flag (`--flag` (3 s), `--flag`, 5 ms) as the option table's", () => {
    const stated = /`--([a-z-]+)`(?:,| \((?:default )?)\s*([\d,]+(?:\.\d+)?)\s*(ms|s|seconds?|minutes?)?\b/g;
    const toUnit: Record<string, number> = {
      ms: 1,
      s: 1000,
      second: 1000,
      seconds: 1000,
      minute: 60_000,
      minutes: 60_000,
    };
    let checked = 0;
    const wrong: string[] = [];
    for (const doc of DOCS) {
      for (const match of read(doc).replace(/\s+/g, ' ').matchAll(stated)) {
        const [text, flag = '', value = '', unit] = match;
        const entry = SERVE_OPTIONS.find((candidate) => candidate.flag === flag);
        if (entry === undefined || typeof entry.default !== 'number') continue;
        const scale = unit === undefined ? 1 : (toUnit[unit] ?? 1);
        const inMs = flag.endsWith('-ms');
        const stated = number(value) * (inMs ? scale : 1);
        checked += 1;
        if (stated !== entry.default) wrong.push(`${doc}: ${text} (the default is ${entry.default})`);
      }
    }
    assert.deepEqual(wrong, []);
    assert.ok(checked >= 8, `only ${checked} stated defaults found: the pattern lost its way`);
  });

  it('gives the exit codes as the error registry holds them: 2 change the command, 1 the operation failed', () => {
    const text = read('docs/configuration.md').replace(/\s+/g, ' ');
    const usage = /- \*\*(\d)\*\*: the command as typed cannot work/.exec(text);
    const failed = /- \*\*(\d)\*\*: the command was understood and what it asked for failed/.exec(text);
    assert.ok(usage && failed, 'docs/configuration.md states both exit codes');
    // The examples each sentence gives, by the code that reports them.
    for (const code of ['INVALID_ARGUMENT', 'INVALID_CONFIG'] as const)
      assert.equal(ERROR_CODES[code].exitCode, Number(usage[1]), code);
    for (const code of ['TAG_EXISTS', 'TAG_NOT_FOUND', 'STORE_UNAVAILABLE', 'CLOCK_MOVED_BACKWARDS'] as const)
      assert.equal(ERROR_CODES[code].exitCode, Number(failed[1]), code);
    const codes = new Set(Object.values(ERROR_CODES).map((spec) => spec.exitCode));
    assert.deepEqual([...codes].sort(), [Number(failed[1]), Number(usage[1])].sort(), 'no third exit code');
  });

  it("gives the account's privileges and GRANTs as src/stores/sql/table-access.ts holds them", () => {
    const doc = read('docs/databases.md');
    const block = /<!-- grants: postgres frond -->\n\n```sql\n([\s\S]*?)\n```/.exec(doc);
    assert.ok(block, 'docs/databases.md shows the GRANTs for the account frond');
    assert.equal(block[1], postgresBackend.grants?.('frond'));
    const section = doc.slice(doc.indexOf('## The account frond connects as'));
    const rows = [...section.matchAll(/^\| (`frond [^|]*|serving[^|]*)\|(.*)\|$/gm)].map((row) =>
      (row[2] ?? '').split('|').map((cell) => cell.trim()),
    );
    // Beyond `use`, what each of `kinds` adds, as `SELECT; INSERT for an opaque tag`.
    const cells = (use: Use, ...kinds: [Use, string][]) =>
      STORE_TABLES.map((table) => {
        const own = (use.needs[table] ?? []).join(', ');
        const more = kinds.flatMap(([kind, what]) => {
          const extra = (kind.needs[table] ?? []).filter((p) => !(use.needs[table] ?? []).includes(p));
          return extra.length === 0 ? [] : [`${extra.join(', ')} for ${what}`];
        });
        return [own, ...more].join('; ');
      });
    assert.deepEqual(rows.slice(0, 6), [
      cells(SERVING),
      cells(FENCING),
      cells(LISTING),
      cells(ADDING, [ADDING_OPAQUE, 'an opaque tag'], [ADDING_FORMATTED, 'a formatted tag']),
      cells(REMOVING),
      cells(SETTING_STEP),
    ]);
  });

  it('gives the batch and range limits and the epoch as the code does', () => {
    const api = read('docs/api.md').replace(/\s+/g, ' ');
    const batch = /`GET \/v1\/segment\/\{tag\}\?count=N` \| [^|]*1 ≤ N ≤ ([\d,]+)/.exec(api);
    const ranges = /`GET \/v1\/ranges\/\{tag\}\?count=N` \| [^|]*1 ≤ N ≤ ([\d,]+)/.exec(api);
    assert.ok(batch && ranges, 'docs/api.md states both limits');
    assert.equal(number(batch[1] as string), MAX_COUNT);
    assert.equal(number(ranges[1] as string), MAX_RANGE_COUNT);
    const readme = read('README.md');
    assert.match(readme, new RegExp(`up to ${MAX_COUNT.toLocaleString('en-US')} IDs`));
    assert.match(readme, new RegExp(`up to ${MAX_RANGE_COUNT.toLocaleString('en-US')} IDs`));
    assert.match(read('docs/how-it-works.md'), new RegExp(`epoch \`${LEAF_EPOCH}\``));
    assert.equal(option('epoch').default, LEAF_EPOCH);
  });
});
