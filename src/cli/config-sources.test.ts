import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { tempDir } from '../../test/support/frond-process.js';
import { isFrondError } from '../core/errors.js';
import { readConfigFile, readLeafProperties } from './config-sources.js';
import { loadJavaProperties } from './java-properties.js';
import { SERVE_OPTIONS as SPECS } from './option-table.js';

function file(name: string, text: string): string {
  const path = join(tempDir(), name);
  writeFileSync(path, text);
  return path;
}

describe('config sources', () => {
  it('reads a JSON config file of flag names into the settings they name', () => {
    const path = file('frond.json', JSON.stringify({ port: 9000, 'no-segment': true, token: ['a', 'b'] }));
    assert.deepEqual(readConfigFile(path, SPECS).values, {
      port: '9000',
      segment: false,
      tokens: ['a', 'b'],
    });
  });

  it('rejects an unknown key or a wrong type with one line naming it', () => {
    const cases: [string, RegExp][] = [
      [JSON.stringify({ prot: 1 }), /unknown key "prot"/],
      [JSON.stringify({ 'no-segment': 'yes' }), /no-segment must be true or false/],
      [JSON.stringify({ port: { n: 1 } }), /port must be a string or a number/],
      [JSON.stringify({ config: 'other.json' }), /unknown key "config"/],
      ['{"port": ', /is not valid JSON/],
      ['[1]', /must hold a JSON object/],
    ];
    for (const [text, pattern] of cases) {
      assert.throws(
        () => readConfigFile(file('bad.json', text), SPECS),
        (error) => isFrondError(error, 'INVALID_CONFIG') && pattern.test(error.message),
        text,
      );
    }
    assert.throws(() => readConfigFile('/nonexistent/frond.json', SPECS), /no such file/);
  });

  it('parses Java properties: separators, comments, continuations, escapes', () => {
    const props = loadJavaProperties(
      Buffer.from('# comment\n! other\na=1\nb : two words\nc three\nd=line\\\n   continued\ne=\\u0041\\tz\n'),
    );
    assert.deepEqual(Object.fromEntries(props), {
      a: '1',
      b: 'two words',
      c: 'three',
      d: 'linecontinued',
      e: 'A\tz',
    });
  });

  it("maps Leaf's leaf.properties to frond's settings", () => {
    const path = file(
      'leaf.properties',
      [
        'leaf.name=com.sankuai.leaf.opensource.test',
        'leaf.segment.enable=true',
        'leaf.jdbc.url=jdbc:mysql://127.0.0.1:3306/leaf?useUnicode=true&characterEncoding=utf8',
        'leaf.jdbc.username=root',
        'leaf.jdbc.password=s3cret',
        'leaf.snowflake.enable=false',
        'leaf.snowflake.zk.address=127.0.0.1:2181',
        'leaf.snowflake.port=2191',
        'server.port=8081',
        'spring.application.name=ignored',
      ].join('\n'),
    );
    assert.deepEqual(readLeafProperties(path, SPECS).values, {
      name: 'com.sankuai.leaf.opensource.test',
      segment: true,
      store: 'mysql://root:s3cret@127.0.0.1:3306/leaf',
      snowflake: false,
      zk: '127.0.0.1:2181',
      port: '8081',
      advertisePort: '2191',
    });
  });

  it('warns about an unknown leaf.* key and reads switches as Boolean.parseBoolean', () => {
    const read = readLeafProperties(
      file('l.properties', 'leaf.jdbc.uri=x\nleaf.segment.enable=maybe\nleaf.snowflake.enable=TRUE\n'),
      SPECS,
    );
    assert.deepEqual(read.values, { segment: false, snowflake: true });
    assert.equal(read.warnings.length, 2);
    assert.match(read.warnings[0] as string, /unknown Leaf key "leaf.jdbc.uri", ignored/);
    assert.match(read.warnings[1] as string, /leaf.segment.enable="maybe" is off, as Leaf reads it/);
  });
});
