import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { envName, type OptionEntry } from '../core/option-entry.js';
import { SERVE_SETTINGS } from '../server/start/serve-settings.js';
import { COORDINATOR_OPTIONS } from '../worker-ids/worker-id-registry.js';
import { COMMANDS, SERVE, SERVE_OPTIONS, TAG_LIST } from './option-table.js';
import { parseCommand, type RawValues } from './options.js';
import { serveConfig } from './serve-config.js';

describe('option table', () => {
  it('gives each setting one name, one flag, one variable and one key, derived alike', () => {
    for (const command of COMMANDS) {
      const names = command.options.map((entry) => entry.name);
      const flags = command.options.map((entry) => entry.flag);
      assert.equal(new Set(names).size, names.length, `${command.name}: a name twice`);
      assert.equal(new Set(flags).size, flags.length, `${command.name}: a flag twice`);
      // One letter each, never -h or -v (help and version, for every command: main.ts).
      const shorts = command.options.flatMap((entry) => (entry.short === undefined ? [] : [entry.short]));
      assert.equal(new Set(shorts).size, shorts.length, `${command.name}: a one-letter flag twice`);
      for (const short of shorts) assert.match(short, /^[a-gi-uw-zA-Z]$/, `${command.name}: -${short}`);
      for (const entry of command.options) {
        assert.ok(entry.env === null || entry.env === envName(entry.flag), entry.flag);
        assert.ok(entry.configKey === null || entry.configKey === entry.flag, entry.flag);
        assert.equal(
          entry.negated,
          entry.flag.startsWith('no-'),
          `--${entry.flag}: only a default-on switch is --no-…`,
        );
      }
    }
  });

  it('keeps every default within its bounds', () => {
    for (const entry of SERVE_OPTIONS) {
      if (entry.type !== 'integer' || entry.default === undefined) continue;
      const max = entry.max === 'now' ? Date.now() : (entry.max as number);
      const value = Number(entry.default);
      assert.ok((entry.min as number) <= value && value <= max, entry.flag);
    }
  });

  it('reads each setting from its flag, variable and key alike, flags first', () => {
    const file = (values: RawValues['values']): RawValues => ({ values, sources: {} });
    const viaFlag = parseCommand(SERVE, ['--segment-wait-ms', '7', '--no-random-sequence']).settings;
    const viaEnv = parseCommand(SERVE, [], {
      env: { FROND_SEGMENT_WAIT_MS: '7', FROND_NO_RANDOM_SEQUENCE: 'true' },
    }).settings;
    const viaFile = parseCommand(SERVE, [], {
      env: {},
      files: [file({ segmentWaitMs: '7', randomSequence: false })],
    }).settings;
    for (const settings of [viaFlag, viaEnv, viaFile]) {
      assert.equal(settings.segmentWaitMs, 7);
      assert.equal(settings.randomSequence, false);
    }
    const both = parseCommand(SERVE, ['--port', '1'], {
      env: { FROND_PORT: '2' },
      files: [file({ port: '3' })],
    });
    assert.equal(both.settings.port, 1);
    assert.equal(
      parseCommand(SERVE, [], { env: { FROND_PORT: '2' }, files: [file({ port: '3' })] }).settings.port,
      2,
    );
  });

  it('reads PORT, as hosting platforms set it, below --port and FROND_PORT and above the files', () => {
    const file = (values: RawValues['values']): RawValues => ({ values, sources: {} });
    const port = (args: string[], env: NodeJS.ProcessEnv, files: RawValues[] = []) =>
      parseCommand(SERVE, args, { env, files }).settings.port;
    assert.equal(port([], { PORT: '5000' }), 5000);
    assert.equal(port([], { PORT: '5000', FROND_PORT: '6000' }), 6000);
    assert.equal(port(['--port', '7000'], { PORT: '5000', FROND_PORT: '6000' }), 7000);
    assert.equal(port([], { PORT: '5000' }, [file({ port: '3' })]), 5000);
    assert.equal(port([], { PORT: '' }, [file({ port: '3' })]), 3);
    assert.throws(() => port([], { PORT: 'http' }), /^FrondError: PORT "http" is invalid/);
  });

  it('names the fields of the server config as the settings they come from', () => {
    const settings = parseCommand(SERVE, ['--data-dir', '/tmp/x'], { env: {} }).settings;
    const names = new Set(SERVE_OPTIONS.map((entry) => entry.name));
    // Fields that group settings: `coordinator` (--zk, --etcd, …) and `tls` are checked together;
    // `storeSetting` says which of --store and --data-dir named `store`, for a store that cannot open.
    // `layout` is --snowflake-layout, --time-unit-ms and --epoch checked together.
    const grouped = new Set(['coordinator', 'tls', 'storeSetting', 'layout']);
    for (const field of Object.keys(serveConfig(settings)))
      assert.ok(names.has(field as never) || grouped.has(field), `ServeConfig.${field} has no entry`);
  });

  it('hands every setting of frond serve to the part of the server that reads it', () => {
    // The coordinator's settings are checked together into `coordinator`; the CLI's own say where settings come from.
    const coordinator = new Set<OptionEntry>(COORDINATOR_OPTIONS);
    for (const entry of SERVE_SETTINGS)
      assert.ok(entry.slice !== undefined || coordinator.has(entry), `--${entry.flag} is in no slice`);
    assert.deepEqual(
      SERVE_OPTIONS.filter((entry) => !(SERVE_SETTINGS as readonly OptionEntry[]).includes(entry)).map(
        (entry) => entry.name,
      ),
      ['config', 'leafConfig'],
    );
  });

  it('answers a bad value with one line naming where it came from and what to use', () => {
    const cases: [string[], NodeJS.ProcessEnv, RegExp][] = [
      [['--max-step', '0'], {}, /^--max-step "0" is invalid: use an integer from 1 to 2147483647$/],
      [
        [],
        { FROND_LOG_LEVEL: 'loud' },
        /^FROND_LOG_LEVEL "loud" is invalid: use debug, info, warn or error$/,
      ],
      [[], { FROND_NO_SEGMENT: 'maybe' }, /^FROND_NO_SEGMENT="maybe" is not a boolean: use true or false$/],
      [
        ['--epoch', String(Date.now() + 60_000)],
        {},
        /^--epoch "\d+" is invalid: use an integer from 0 to \d+$/,
      ],
    ];
    for (const [args, env, pattern] of cases)
      assert.throws(
        () => parseCommand(SERVE, args, { env }),
        (error: Error) => pattern.test(error.message),
        args.join(' '),
      );
  });

  it("refuses a FROND_ variable no command reads, in every command, and passes another command's", () => {
    for (const command of COMMANDS)
      assert.throws(
        () => parseCommand(command, [], { env: { FROND_STROE: 'x' }, rejectUnknownEnv: true }),
        (error: Error) =>
          error.message.startsWith(
            `unknown environment variable FROND_STROE for 'frond ${command.name}' (did you mean FROND_STORE?)`,
          ),
        command.name,
      );
    // FROND_PORT is serve's: the tag commands run in the same environment.
    const listed = parseCommand(TAG_LIST, [], { env: { FROND_PORT: '9000' }, rejectUnknownEnv: true });
    assert.equal(listed.settings.json, false);
  });
});
