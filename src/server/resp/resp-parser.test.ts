import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { propertyRuns } from '../../../test/support/property-runs.js';
import { array, bulk, error, integer, integers, map, nullBulk } from './resp-encode.js';
import { RespParser, RespProtocolError } from './resp-parser.js';

function encodeCommand(args: readonly string[]): Buffer {
  return Buffer.from(array(args.map(bulk)));
}

function all(parser: RespParser): string[][] {
  const out: string[][] = [];
  for (let command = parser.next(); command !== undefined; command = parser.next()) out.push(command);
  return out;
}

describe('RespParser', () => {
  it('reads multibulk commands, several in one chunk', () => {
    const parser = new RespParser();
    parser.push(Buffer.from('*2\r\n$4\r\nINCR\r\n$3\r\nabc\r\n*1\r\n$4\r\nPING\r\n'));
    assert.deepEqual(all(parser), [['INCR', 'abc'], ['PING']]);
    assert.equal(parser.pendingBytes, 0);
  });

  it('reads inline commands, with quotes, and skips empty lines', () => {
    const parser = new RespParser();
    parser.push(Buffer.from('PING\r\n\r\nINCR  "a b\\x41"  \'c\'\nECHO\t"x\\ny"\r\n'));
    assert.deepEqual(all(parser), [['PING'], ['INCR', 'a bA', 'c'], ['ECHO', 'x\ny']]);
  });

  it('reads UTF-8 arguments and empty bulk strings', () => {
    const parser = new RespParser();
    parser.push(encodeCommand(['GET', '订单', '']));
    assert.deepEqual(all(parser), [['GET', '订单', '']]);
  });

  it('waits for a command split at every byte', () => {
    const bytes = Buffer.concat([encodeCommand(['INCR', 'tag-1']), Buffer.from('PING\r\n')]);
    for (let cut = 1; cut < bytes.length; cut++) {
      const parser = new RespParser();
      const got: string[][] = [];
      parser.push(bytes.subarray(0, cut));
      got.push(...all(parser));
      parser.push(bytes.subarray(cut));
      got.push(...all(parser));
      assert.deepEqual(got, [['INCR', 'tag-1'], ['PING']], `cut at ${cut}`);
    }
  });

  it('reads past *0 and *-1 without recursion', () => {
    const parser = new RespParser();
    parser.push(Buffer.from(`${'*0\r\n'.repeat(200_000)}*-1\r\nPING\r\n`));
    assert.deepEqual(all(parser), [['PING']]);
  });

  for (const [name, bytes] of [
    ['a negative bulk length', '*1\r\n$-5\r\n'],
    ['a huge bulk length', '*1\r\n$99999999999\r\n'],
    ['a bulk over the limit', `*1\r\n$${64 * 1024 + 1}\r\n`],
    ['too many arguments', '*5000\r\n'],
    ['a bad length', '*x\r\n'],
    ['an empty length', '*\r\n'],
    ['a missing $', '*1\r\n:1\r\n'],
    ['a bulk without \\r\\n after it', '*1\r\n$2\r\nabXY'],
    ['an unbalanced quote', 'ECHO "abc\r\n'],
    ['a header without \\r', '*1\n'],
    ['an endless length line', `*${'1'.repeat(100)}`],
  ] as const) {
    it(`refuses ${name}`, () => {
      const parser = new RespParser();
      parser.push(Buffer.from(bytes));
      assert.throws(() => all(parser), RespProtocolError);
    });
  }

  it('refuses an unterminated inline line past the limit, and a multibulk command past it', () => {
    const inline = new RespParser({ maxInlineBytes: 1000 });
    inline.push(Buffer.alloc(1001, 0x61));
    assert.throws(() => inline.next(), RespProtocolError);
    const multi = new RespParser({ maxInlineBytes: 1000 });
    multi.push(Buffer.from(`*100\r\n${'$100\r\n'}${'a'.repeat(100)}\r\n`.repeat(1)));
    for (let i = 0; i < 10; i++) multi.push(Buffer.from(`$100\r\n${'a'.repeat(100)}\r\n`));
    assert.throws(() => multi.next(), RespProtocolError);
  });

  it('gives back every command of any split of any pipeline (property)', () => {
    const arg = fc.oneof(fc.string({ maxLength: 20 }), fc.string({ unit: 'grapheme', maxLength: 10 }));
    fc.assert(
      fc.property(
        fc.array(fc.array(arg, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 20 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        (commands, cuts) => {
          const bytes = Buffer.concat(commands.map(encodeCommand));
          const points = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
          const parser = new RespParser();
          const got: string[][] = [];
          let from = 0;
          for (const point of [...points, bytes.length]) {
            parser.push(bytes.subarray(from, point));
            got.push(...all(parser));
            from = point;
          }
          assert.deepEqual(got, commands);
        },
      ),
      { numRuns: propertyRuns(200) },
    );
  });

  it('never throws anything but RespProtocolError on random bytes (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 8 }), (chunks) => {
        const parser = new RespParser({ maxBulkBytes: 16, maxInlineBytes: 128, maxArgs: 8 });
        try {
          for (const chunk of chunks) {
            parser.push(Buffer.from(chunk));
            for (let i = 0; i < 1000 && parser.next() !== undefined; i++);
          }
        } catch (caught) {
          assert.ok(caught instanceof RespProtocolError, String(caught));
        }
      }),
      { numRuns: propertyRuns(500) },
    );
  });
});

describe('resp-encode', () => {
  it('encodes the reply types', () => {
    assert.equal(integer(12n), ':12\r\n');
    assert.equal(bulk('订'), '$3\r\n订\r\n');
    assert.equal(nullBulk(2), '$-1\r\n');
    assert.equal(nullBulk(3), '_\r\n');
    assert.equal(integers([1, 2n]), '*2\r\n:1\r\n:2\r\n');
    assert.equal(error('TAG_NOT_FOUND', 'tag x\r\nis missing'), '-TAG_NOT_FOUND tag x is missing\r\n');
    assert.equal(map([['a', integer(1)]], 3), '%1\r\n$1\r\na\r\n:1\r\n');
    assert.equal(map([['a', integer(1)]], 2), '*2\r\n$1\r\na\r\n:1\r\n');
  });
});
