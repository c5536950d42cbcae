import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LogFormat } from '../../core/logger.js';
import { createLogger, createPrettyLogger, prettyLine } from './pino-logger.js';

describe('pretty log lines', () => {
  const at = new Date(2026, 0, 2, 22, 14, 5);

  it('writes the time, the level, the event, a message as it reads, then key=value', () => {
    assert.equal(
      prettyLine(at, 'info', 'listening', {
        url: 'http://127.0.0.1:8080',
        snowflakeWorkerId: 3,
        segment: 'off',
      }),
      '22:14:05 info  listening url=http://127.0.0.1:8080 snowflakeWorkerId=3 segment=off',
    );
    assert.equal(
      prettyLine(at, 'warn', 'config.warning', { message: 'listening on every interface (0.0.0.0)' }),
      '22:14:05 warn  config.warning listening on every interface (0.0.0.0)',
    );
    assert.equal(prettyLine(at, 'info', 'stopped', {}), '22:14:05 info  stopped');
  });

  it('quotes a value with a blank, a quote or an =, and writes lists, objects and big integers as JSON', () => {
    assert.equal(
      prettyLine(at, 'error', 'segment.load_failed', {
        tag: 'a b',
        error: 'x="1"',
        ids: [1, 2],
        maxId: 9223372036854775807n,
        nested: { max: 9223372036854775807n },
        gone: undefined,
        none: null,
      }),
      '22:14:05 error segment.load_failed tag="a b" error="x=\\"1\\"" ids=[1,2] maxId=9223372036854775807 nested={"max":"9223372036854775807"} none=null',
    );
  });

  it('writes only events at or above its level', () => {
    const lines: string[] = [];
    const logger = createPrettyLogger('warn', { write: (line: string) => lines.push(line) }, () => at);
    logger.log('info', 'listening', {});
    logger.log('error', 'shutdown_failed', { error: 'boom' });
    assert.deepEqual(lines, ['22:14:05 error shutdown_failed error=boom\n']);
  });

  it('is pretty on a terminal or when asked, JSON otherwise', () => {
    const written = (format: LogFormat, terminal: boolean) => {
      const lines: string[] = [];
      createLogger('info', format, terminal, { write: (line: string) => lines.push(line) }).log(
        'info',
        'stopped',
      );
      return lines.join('');
    };
    const pretty = /^\d\d:\d\d:\d\d info {2}stopped\n$/;
    const json = /^\{"level":"info",.*"event":"stopped"\}\n$/;
    assert.match(written('auto', true), pretty);
    assert.match(written('auto', false), json);
    assert.match(written('pretty', false), pretty);
    assert.match(written('json', true), json);
  });
});
