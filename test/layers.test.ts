import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = resolve(import.meta.dirname, '..');

/**
 * The layers, bottom up, and what each may import (besides itself). The core is pure: no other
 * layer, no npm package, no Node built-in (no I/O). Backends see only the core (and the SQL
 * connection layer below them) and never each other; the server composes them; the CLI sits on top. The SDK is a separate package that
 * imports nothing of the server.
 */
const LAYERS: Record<string, { may: string[]; packages: boolean }> = {
  'src/core': { may: [], packages: false },
  // Node platform helpers every backend needs alike (directories): I/O, so not the core's.
  'src/platform': { may: ['src/core'], packages: true },
  // Connections to a database server (URL, TLS, redaction, pools): shared by the stores and by a
  // worker-ID source that keeps its leases in the same database, neither of which may import the
  // other; it knows nothing of what they keep there.
  'src/sql': { may: ['src/core', 'src/platform'], packages: true },
  'src/stores': { may: ['src/core', 'src/platform', 'src/sql'], packages: true },
  'src/worker-ids': { may: ['src/core', 'src/platform', 'src/sql'], packages: true },
  'src/server': {
    may: ['src/core', 'src/platform', 'src/sql', 'src/stores', 'src/worker-ids'],
    packages: true,
  },
  'src/cli': {
    may: ['src/core', 'src/platform', 'src/sql', 'src/stores', 'src/worker-ids', 'src/server'],
    packages: true,
  },
  'packages/client/src': { may: [], packages: false },
};

/** Every `from '…'` and `import('…')` of a source file. */
export function importsOf(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(/(?:^|\s)(?:import|export)\b[^'"]*?from\s*['"]([^'"]+)['"]/g))
    found.push(match[1] as string);
  for (const match of text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) found.push(match[1] as string);
  for (const match of text.matchAll(/^import\s*['"]([^'"]+)['"]/gm)) found.push(match[1] as string);
  return found;
}

function layerOf(path: string): string | undefined {
  return Object.keys(LAYERS).find((layer) => path === layer || path.startsWith(`${layer}/`));
}

/** What is wrong with `specifier` imported by the file at `file` (repository-relative), if anything. */
export function violation(file: string, specifier: string): string | undefined {
  const layer = layerOf(file);
  if (layer === undefined) return undefined;
  const rules = LAYERS[layer] as { may: string[]; packages: boolean };
  if (!specifier.startsWith('.')) {
    // The SDK may use Node's built-ins (it runs on Node too); the core may not.
    if (layer === 'packages/client/src' && specifier.startsWith('node:')) return undefined;
    return rules.packages ? undefined : `${file} imports ${specifier}: ${layer} imports no package`;
  }
  const target = relative(ROOT, resolve(ROOT, dirname(file), specifier));
  const targetLayer = layerOf(target);
  if (targetLayer === layer || (targetLayer !== undefined && rules.may.includes(targetLayer)))
    return undefined;
  return `${file} imports ${target}: ${layer} may import only ${[layer, ...rules.may].join(', ')}`;
}

function sources(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) sources(path, out);
    // Tests may reach across layers (they compose real parts); the rule is for what ships.
    else if (path.endsWith('.ts') && !path.endsWith('.test.ts') && !path.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** The source file `specifier` names from `file` (both repository-relative), if it is one of `known`. */
function target(file: string, specifier: string, known: ReadonlySet<string>): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  // NodeNext: a source imports `./x.js` for `./x.ts`.
  const path = relative(ROOT, resolve(ROOT, dirname(file), specifier)).replace(/\.js$/, '.ts');
  return known.has(path) ? path : undefined;
}

/**
 * Import circles of `graph` (file → the files it imports), each as the files along it with the
 * first repeated at the end; none exactly when the graph has none. A depth-first walk: an import of
 * a file still on the walk's path closes a circle, and every circle has at least one such import.
 * Type-only imports count: a circle of types still ties the files together.
 */
export function circlesOf(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const circles: string[][] = [];
  const done = new Set<string>();
  const path: string[] = [];
  const onPath = new Set<string>();
  const visit = (file: string) => {
    path.push(file);
    onPath.add(file);
    for (const next of graph.get(file) ?? []) {
      if (onPath.has(next)) circles.push([...path.slice(path.indexOf(next)), next]);
      else if (!done.has(next)) visit(next);
    }
    path.pop();
    onPath.delete(file);
    done.add(file);
  };
  for (const file of [...graph.keys()].sort()) if (!done.has(file)) visit(file);
  return circles;
}

describe('layers', () => {
  it('no source file imports a layer above its own, and the core and the SDK import no package', () => {
    const problems: string[] = [];
    let checked = 0;
    for (const layer of Object.keys(LAYERS)) {
      for (const file of sources(layer)) {
        for (const specifier of importsOf(readFileSync(join(ROOT, file), 'utf8'))) {
          checked++;
          const problem = violation(file, specifier);
          if (problem !== undefined) problems.push(problem);
        }
      }
    }
    assert.ok(checked > 200, `only ${checked} imports found: the scan is broken`);
    assert.deepEqual(problems, []);
  });

  it('catches an import that goes up a layer, sideways between backends, or out of the core', () => {
    assert.match(
      violation('src/core/segment-buffer.ts', '../server/http/app.js') ?? '',
      /src\/core may import only src\/core/,
    );
    assert.match(violation('src/core/clock.ts', 'node:fs') ?? '', /imports no package/);
    assert.match(
      violation('src/stores/sqlite/x.ts', '../../worker-ids/registry.js') ?? '',
      /may import only/,
    );
    assert.match(violation('src/server/http/app.ts', '../../cli/main.js') ?? '', /may import only/);
    assert.match(
      violation('packages/client/src/client.ts', '../../../src/core/errors.js') ?? '',
      /may import only/,
    );
    assert.equal(violation('src/cli/serve.ts', '../server/start/start-server.js'), undefined);
    assert.equal(violation('src/stores/sqlite/x.ts', '../../core/errors.js'), undefined);
    // Stores and worker-ID sources share the SQL connection layer; it sees neither of them.
    assert.equal(violation('src/stores/sql/x.ts', '../../sql/postgres-connections.js'), undefined);
    assert.equal(violation('src/worker-ids/sql/x.ts', '../../sql/mysql-connections.js'), undefined);
    assert.match(violation('src/sql/x.ts', '../stores/sql/leaf-rows.js') ?? '', /may import only/);
    assert.match(violation('src/sql/x.ts', '../worker-ids/lease/x.js') ?? '', /may import only/);
    assert.deepEqual(
      importsOf(
        "import { a } from './a.js';\nimport type { B } from '../b.js';\nconst c = await import('./c.js');",
      ),
      ['./a.js', '../b.js', './c.js'],
    );
  });

  it('no source file imports itself back through others (no import circles)', () => {
    const files = Object.keys(LAYERS).flatMap((layer) => sources(layer));
    const known = new Set(files);
    const graph = new Map<string, string[]>();
    let edges = 0;
    for (const file of files) {
      const imports = importsOf(readFileSync(join(ROOT, file), 'utf8')).flatMap((specifier) => {
        const path = target(file, specifier, known);
        return path === undefined ? [] : [path];
      });
      edges += imports.length;
      graph.set(file, imports);
    }
    assert.ok(edges > 200, `only ${edges} imports between source files found: the scan is broken`);
    assert.deepEqual(
      circlesOf(graph).map((circle) => circle.join(' → ')),
      [],
    );
  });

  it('finds a circle of two, of three and none in a chain', () => {
    const graph = (edges: Record<string, string[]>) => new Map(Object.entries(edges));
    assert.deepEqual(circlesOf(graph({ a: ['b'], b: ['a'] })), [['a', 'b', 'a']]);
    assert.deepEqual(circlesOf(graph({ a: ['b'], b: ['c'], c: ['a'], d: ['a'] })), [['a', 'b', 'c', 'a']]);
    assert.deepEqual(circlesOf(graph({ a: ['b', 'c'], b: ['c'], c: [] })), []);
    assert.equal(
      target('src/server/http/app.ts', './router.js', new Set(['src/server/http/router.ts'])),
      'src/server/http/router.ts',
    );
  });

  it('nothing in the repository points at files outside it', () => {
    const outside: string[] = [];
    const roots = ['src', 'test', 'bench', 'scripts', 'docs', 'packages/client/src', 'packages/client/test'];
    const walk = (dir: string) => {
      for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
        const path = `${dir}/${entry.name}`;
        if (entry.isDirectory()) walk(path);
        else if (/\.(ts|mjs|md|sh)$/.test(path)) {
          const text = readFileSync(join(ROOT, path), 'utf8');
          if (/\.\.\/shared\/|reference\/(services|leaf|peers)\.md/.test(text)) outside.push(path);
        }
      }
    };
    for (const root of roots) walk(root);
    for (const file of ['README.md', 'packages/client/README.md']) {
      if (/\.\.\/shared\/|reference\/(services|leaf|peers)\.md/.test(readFileSync(join(ROOT, file), 'utf8')))
        outside.push(file);
    }
    assert.deepEqual(outside, []);
  });
});
