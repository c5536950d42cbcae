import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { propertyRuns } from '../../test/support/property-runs.js';
import { isFrondError } from './errors.js';
import {
  type IdFormat,
  MAX_FORMAT_LENGTH,
  MAX_LITERAL_LENGTH,
  type Period,
  type PeriodUnit,
  parseFormat,
  periodAt,
  renderId,
  retryAfterSeconds,
  validTimeZone,
} from './id-format.js';

const ZONES = [
  'UTC',
  'Europe/Berlin',
  'America/New_York',
  'Australia/Lord_Howe',
  'Asia/Kolkata',
  'Asia/Kathmandu',
  'Pacific/Chatham',
];
/** One format per unit, numeric where it fits 19 digits. */
const UNIT_FORMATS: Record<PeriodUnit, string> = {
  none: 'N-{seq:6}',
  year: '{yyyy}{seq:8}',
  month: 'M{yy}{MM}-{seq}',
  day: '{yyyy}{MM}{dd}{seq:6}',
  hour: 'H-{yyyy}{MM}{dd}{HH}-{seq:4}',
};
const DATED_UNITS = ['year', 'month', 'day', 'hour'] as const;
const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;

function format(text: string, timeZone = 'UTC'): IdFormat {
  return parseFormat({ format: text, timeZone });
}

function refused(text: string, timeZone = 'UTC'): string {
  try {
    parseFormat({ format: text, timeZone });
  } catch (error) {
    assert.ok(isFrondError(error), `${text}: ${error}`);
    assert.equal(error.code, 'INVALID_ARGUMENT');
    assert.doesNotMatch(error.message, /\n/);
    return error.message;
  }
  assert.fail(`format ${JSON.stringify(text)} in ${timeZone} was accepted`);
}

/**
 * The key of a moment, computed apart from the code under test (formatToParts, another locale):
 * the local year, month, day and hour in the zone, cut to the unit.
 */
const oracles = new Map<string, Intl.DateTimeFormat>();
function oracleKey(timeZone: string, unit: PeriodUnit, ms: number): string {
  if (unit === 'none') return 'all';
  let intl = oracles.get(timeZone);
  if (intl === undefined) {
    intl = new Intl.DateTimeFormat('en-GB', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
    });
    oracles.set(timeZone, intl);
  }
  const parts = Object.fromEntries(intl.formatToParts(ms).map((part) => [part.type, part.value]));
  const text = `${parts.year}${parts.month}${parts.day}${parts.hour}`;
  return text.slice(0, { year: 4, month: 6, day: 8, hour: 10 }[unit]);
}

/**
 * What a period must be: the run of one key around `nowMs`, checked at its ends, one ms outside
 * them, and (`grid`) on a grid inside (every 15 minutes, at most 400 points: transitions fall on whole
 * quarter hours, and a year's run is checked every 22 hours).
 */
function assertPeriod(timeZone: string, unit: PeriodUnit, nowMs: number, period: Period, grid = true): void {
  const where = `${unit} in ${timeZone} at ${new Date(nowMs).toISOString()}`;
  const key = oracleKey(timeZone, unit, nowMs);
  assert.equal(period.key, key, where);
  assert.ok(period.startMs <= nowMs && nowMs < period.endMs, `${where}: ${JSON.stringify(period)}`);
  assert.ok(period.endMs > period.startMs, where);
  assert.equal(oracleKey(timeZone, unit, period.startMs), key, `${where}: at startMs`);
  assert.equal(oracleKey(timeZone, unit, period.endMs - 1), key, `${where}: at endMs - 1`);
  assert.notEqual(oracleKey(timeZone, unit, period.endMs), key, `${where}: at endMs`);
  assert.notEqual(oracleKey(timeZone, unit, period.startMs - 1), key, `${where}: at startMs - 1`);
  const step = Math.max(
    15 * MINUTE_MS,
    Math.ceil((period.endMs - period.startMs) / 400 / MINUTE_MS) * MINUTE_MS,
  );
  for (let at = period.startMs + step; grid && at < period.endMs; at += step)
    assert.equal(oracleKey(timeZone, unit, at), key, `${where}: inside at ${new Date(at).toISOString()}`);
}

describe('parseFormat', () => {
  it('compiles each unit, finest date token first, with the widest sequence its text allows', () => {
    const cases: [string, PeriodUnit, boolean, number | null, bigint][] = [
      ['{seq:6}', 'none', true, 6, 999_999n],
      ['ORD-{seq}', 'none', false, null, 2n ** 63n - 1n],
      ['{yyyy}{seq:8}', 'year', true, 8, 99_999_999n],
      ['{yy}{MM}-{seq}', 'month', false, null, 2n ** 63n - 1n],
      ['{dd}.{MM}.{yyyy} {seq:3}', 'day', false, 3, 999n],
      ['ORD-{yy}{MM}{dd}{HH}-{seq:18}', 'hour', false, 18, 10n ** 18n - 1n],
      ['{seq:1}{HH}{dd}{MM}{yy}', 'hour', true, 1, 9n],
      ['订单 {yyyy}年{MM}月 №{seq:5}', 'month', false, 5, 99_999n],
    ];
    for (const [text, unit, numeric, seqWidth, maxSeq] of cases) {
      const compiled = format(text, 'Europe/Berlin');
      assert.deepEqual(
        {
          unit: compiled.unit,
          numeric: compiled.numeric,
          seqWidth: compiled.seqWidth,
          maxSeq: compiled.maxSeq,
          setting: compiled.setting,
        },
        { unit, numeric, seqWidth, maxSeq, setting: { format: text, timeZone: 'Europe/Berlin' } },
        text,
      );
    }
  });

  it('refuses every bad format in one line that names the problem', () => {
    const cases: [string, RegExp][] = [
      ['{ss}-{seq}', /unknown token \{ss\} at character 1 /],
      ['ORD-{yyyy}{MM}{dd}{HH}{mm}-{seq}', /unknown token \{mm\} at character 23 .*\{MM\} is the month/],
      ['{seq:0}', /unknown token \{seq:0\} at character 1 .*1 to 18/],
      ['A{seq:19}', /unknown token \{seq:19\} at character 2 .*1 to 18/],
      ['{seq:06}', /unknown token \{seq:06\} .*leading zeros/],
      ['{seq:}', /unknown token \{seq:\}/],
      ['{SEQ}', /unknown token \{SEQ\}/],
      ['{}{seq}', /unknown token \{\} at character 1/],
      ['{se\nq}{seq}', /unknown token "\{se\\nq\}" at character 1/],
      ['ORD-{seq', /unmatched \{ at character 5/],
      ['ORD-{{seq}', /unmatched \{ at character 5/],
      ['ORD}-{seq}', /unmatched \} at character 4/],
      ['{seq}}', /unmatched \} at character 6/],
      ['ORD-2026', /exactly one \{seq\} or \{seq:N\}.*none/],
      ['', /exactly one \{seq\}.*none/],
      ['{seq}-{seq:3}', /exactly one \{seq\} or \{seq:N\}; this one has 2/],
      ['{MM}-{seq}', /\{MM\} needs \{yyyy\} or \{yy\} too: .*same number would come back/],
      ['{dd}-{seq}', /\{dd\} needs \{yyyy\} or \{yy\} and \{MM\} too/],
      ['{yyyy}{dd}-{seq}', /\{dd\} needs \{MM\} too: .*another month/],
      ['{yyyy}{MM}{HH}-{seq}', /\{HH\} needs \{dd\} too: .*another day/],
      ['{HH}-{seq}', /\{HH\} needs \{yyyy\} or \{yy\} and \{MM\} and \{dd\} too/],
      ['{yyyy}{yy}-{seq}', /the year appears twice \(\{yyyy\} and \{yy\}\)/],
      ['{yyyy}{MM}{MM}-{seq}', /the month appears twice/],
      ['{yyyy}{MM}{dd}{HH}{HH}{seq}', /the hour appears twice/],
      ['A\tB{seq}', /character 2 is U\+0009, not printable/],
      ['A{seq}\n', /character 7 is U\+000A/],
      ['\u200b{seq}', /character 1 is U\+200B/],
      ['A\u0085{seq}', /U\+0085/],
      [
        `${'x'.repeat(MAX_LITERAL_LENGTH + 1)}{seq}`,
        /literal text is at most 64 characters in all; this format has 65/,
      ],
      [`${'x'.repeat(40)}{seq}${'y'.repeat(25)}`, /at most 64 characters in all; this format has 65/],
      [`x{seq}${'{HH}'.repeat(24)}`, new RegExp(`at most ${MAX_FORMAT_LENGTH} characters; this one has 102`)],
    ];
    for (const [text, expected] of cases) assert.match(refused(text), expected, JSON.stringify(text));
  });

  it('counts characters, not UTF-16 units, in the limits', () => {
    // 64 characters outside the BMP are 128 UTF-16 units: allowed.
    assert.equal(format(`${'😀'.repeat(MAX_LITERAL_LENGTH)}{seq}`).numeric, false);
    assert.match(refused(`${'😀'.repeat(MAX_LITERAL_LENGTH + 1)}{seq}`), /this format has 65/);
    assert.match(refused(`😀{ss}{seq}`), /\{ss\} at character 2/);
  });

  it('keeps a numeric format within a signed 64-bit integer, on both sides of 2^63 - 1', () => {
    const accepted = [
      '{yy}{MM}{dd}{HH}{seq:9}', // 17 digits
      '8{yy}{MM}{dd}{HH}{seq:10}', // 19 digits, at most 8991231239999999999
      '92233720368547757{seq:2}', // 19 digits, at most 9223372036854775799
      '922337203685477579{seq:1}', // at most 9223372036854775799
      '0{seq:18}', // 19 digits, at most 0999999999999999999
      '{seq:18}',
    ];
    for (const text of accepted) assert.equal(format(text).numeric, true, text);
    const cases: [string, RegExp][] = [
      [
        '922337203685477580{seq:1}',
        /largest number 9223372036854775809 \(19 digits\) is above .*9223372036854775807: use a smaller N/,
      ],
      ['92233720368547758{seq:2}', /largest number 9223372036854775899 \(19 digits\)/],
      ['9{seq:18}', /largest number 9999999999999999999 \(19 digits\)/],
      [
        '{yyyy}{MM}{dd}{HH}{seq:9}',
        /largest number 9999123123999999999 \(19 digits\).*smaller N in \{seq:N\} or \{yy\}/,
      ],
      ['{yy}{MM}{dd}{HH}{seq:11}', /largest number 9912312399999999999/],
      ['{yyyy}{MM}{dd}{HH}{seq:10}', /numbers have 20 digits, more than .*19 digits.*or \{yy\} for the year/],
      ['10{seq:18}', /numbers have 20 digits/],
      ['{yyyy}{MM}{dd}{seq}', /digits only .* unpadded \{seq\} has no bound: use \{seq:N\}/],
      ['{seq}', /unpadded \{seq\}/],
    ];
    for (const [text, expected] of cases) assert.match(refused(text), expected, text);
    // The same widths are fine once the text holds a letter: a string has no 64-bit limit.
    for (const text of ['A{yyyy}{MM}{dd}{HH}{seq:18}', '{yyyy}-{seq}', '9x{seq:18}'])
      assert.equal(format(text).numeric, false, text);
  });

  it('checks the time zone by constructing an Intl.DateTimeFormat, naming the zone it refuses', () => {
    assert.equal(format('{seq}x', 'Pacific/Chatham').setting.timeZone, 'Pacific/Chatham');
    assert.match(
      refused('{seq}x', 'Mars/Olympus_Mons'),
      /time zone "Mars\/Olympus_Mons" is not an IANA time zone/,
    );
    assert.match(refused('{seq}x', ''), /time zone "" is not an IANA name/);
    assert.match(refused('{seq}x', `Europe/${'x'.repeat(60)}`), /1 to 64 characters/);
  });
});

describe('validTimeZone', () => {
  it('answers the canonical spelling', () => {
    assert.equal(validTimeZone('Europe/Berlin'), 'Europe/Berlin');
    assert.equal(validTimeZone('europe/berlin'), 'Europe/Berlin');
    assert.equal(validTimeZone('utc'), 'UTC');
    assert.equal(validTimeZone('Etc/UTC'), 'UTC');
    assert.equal(validTimeZone('US/Eastern'), 'America/New_York');
    // Whatever ICU calls it, it is the same zone (Node 20: Asia/Calcutta).
    assert.equal(validTimeZone(validTimeZone('Asia/Kolkata')), validTimeZone('Asia/Kolkata'));
  });

  it('refuses a name Intl does not know, naming it', () => {
    for (const zone of ['Mars/Base', '+05:30', 'Europe/Berlin ', 'UTC\n']) {
      assert.throws(
        () => validTimeZone(zone),
        (error: unknown) =>
          isFrondError(error) &&
          error.code === 'INVALID_ARGUMENT' &&
          error.message.includes(JSON.stringify(zone)),
        zone,
      );
    }
  });
});

describe('periodAt', () => {
  for (const unit of DATED_UNITS) {
    it(`gives the run of one ${unit} key around random moments, in zones with :30 and :45 offsets and DST`, () => {
      const compiled = Object.fromEntries(ZONES.map((zone) => [zone, format(UNIT_FORMATS[unit], zone)]));
      fc.assert(
        fc.property(
          fc.constantFrom(...ZONES),
          fc.integer({ min: Date.UTC(1950, 0, 1), max: Date.UTC(2200, 0, 1) }),
          (zone, nowMs) => {
            const period = periodAt(compiled[zone] as IdFormat, nowMs);
            assertPeriod(zone, unit, nowMs, period);
            // Periods tile time: the next one starts where this one ends.
            assert.equal(periodAt(compiled[zone] as IdFormat, period.endMs).startMs, period.endMs);
            assert.equal(periodAt(compiled[zone] as IdFormat, period.startMs - 1).endMs, period.startMs);
          },
        ),
        { numRuns: propertyRuns(unit === 'year' ? 100 : 300) },
      );
    });
  }

  it('is right around every offset change of 2026 in each zone, every 7.5 minutes within 3 hours', () => {
    for (const zone of ZONES) {
      const clock = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' });
      const offset = (ms: number) =>
        clock.formatToParts(ms).find((part) => part.type === 'timeZoneName')?.value;
      const formats = DATED_UNITS.map((unit) => [unit, format(UNIT_FORMATS[unit], zone)] as const);
      let changes = 0;
      for (let hour = Date.UTC(2026, 0, 1); hour < Date.UTC(2027, 0, 1); hour += HOUR_MS) {
        if (offset(hour) === offset(hour + HOUR_MS)) continue;
        changes++;
        for (let at = hour - 3 * HOUR_MS; at <= hour + 4 * HOUR_MS; at += 7.5 * MINUTE_MS)
          // The inside of a month or a year is checked by the properties above; here its ends.
          for (const [unit, compiled] of formats)
            assertPeriod(zone, unit, at, periodAt(compiled, at), unit === 'hour' || unit === 'day');
      }
      const expected = ['UTC', 'Asia/Kolkata', 'Asia/Kathmandu'].includes(zone) ? 0 : 2;
      assert.equal(changes, expected, `${zone} changes its offset ${expected} times in 2026`);
    }
  });

  it('gives both 02:xx hours of the fall-back in Europe/Berlin (2026-10-25 01:00 UTC) one key', () => {
    const hourly = format(UNIT_FORMATS.hour, 'Europe/Berlin');
    const summer = periodAt(hourly, Date.UTC(2026, 9, 25, 0, 30)); // 02:30 CEST
    const winter = periodAt(hourly, Date.UTC(2026, 9, 25, 1, 30)); // 02:30 CET, an hour later
    assert.deepEqual(summer, winter);
    assert.deepEqual(summer, {
      key: '2026102502',
      startMs: Date.UTC(2026, 9, 25, 0, 0),
      endMs: Date.UTC(2026, 9, 25, 2, 0),
    });
    assert.equal(periodAt(hourly, Date.UTC(2026, 9, 25, 2, 0)).key, '2026102503');
    // The day of the fall-back has 25 hours.
    const day = periodAt(format(UNIT_FORMATS.day, 'Europe/Berlin'), Date.UTC(2026, 9, 25, 12));
    assert.equal(day.endMs - day.startMs, 25 * HOUR_MS);
  });

  it('skips 02 on the spring-forward in Europe/Berlin (2026-03-29 01:00 UTC)', () => {
    const hourly = format(UNIT_FORMATS.hour, 'Europe/Berlin');
    assert.deepEqual(periodAt(hourly, Date.UTC(2026, 2, 29, 1) - 1), {
      key: '2026032901',
      startMs: Date.UTC(2026, 2, 29, 0),
      endMs: Date.UTC(2026, 2, 29, 1),
    });
    assert.deepEqual(periodAt(hourly, Date.UTC(2026, 2, 29, 1)), {
      key: '2026032903',
      startMs: Date.UTC(2026, 2, 29, 1),
      endMs: Date.UTC(2026, 2, 29, 2),
    });
    // The local day of 2026-03-29 (23:00 UTC the day before to 22:00 UTC) has 23 hour keys.
    // The local day of 2026-03-29 (23:00 UTC the day before to 22:00 UTC) has 23 hour keys.
    const keys = new Set<string>();
    for (let at = Date.UTC(2026, 2, 28, 23); at < Date.UTC(2026, 2, 29, 22); at += MINUTE_MS)
      keys.add(periodAt(hourly, at).key);
    assert.equal(keys.size, 23);
    assert.equal(keys.has('2026032902'), false);
    const day = periodAt(format(UNIT_FORMATS.day, 'Europe/Berlin'), Date.UTC(2026, 2, 29, 12));
    assert.equal(day.endMs - day.startMs, 23 * HOUR_MS);
  });

  it('follows :30 and :45 offsets: days of Asia/Kolkata, hours of Asia/Kathmandu and Pacific/Chatham', () => {
    assert.deepEqual(periodAt(format(UNIT_FORMATS.day, 'Asia/Kolkata'), Date.UTC(2026, 11, 1, 12)), {
      key: '20261201',
      startMs: Date.UTC(2026, 10, 30, 18, 30),
      endMs: Date.UTC(2026, 11, 1, 18, 30),
    });
    assert.deepEqual(periodAt(format(UNIT_FORMATS.hour, 'Asia/Kathmandu'), Date.UTC(2026, 11, 1, 12)), {
      key: '2026120117',
      startMs: Date.UTC(2026, 11, 1, 11, 15),
      endMs: Date.UTC(2026, 11, 1, 12, 15),
    });
    // Chatham turns 03:45 (+13:45) back to 02:45 (+12:45) on 2026-04-05: the hour 02 comes back
    // after 45 minutes of 03, as a second run of the same key (one counter, numbers go on).
    const chatham = format(UNIT_FORMATS.hour, 'Pacific/Chatham');
    const runs = [];
    for (let at = Date.UTC(2026, 3, 4, 13); at < Date.UTC(2026, 3, 4, 16); ) {
      const period = periodAt(chatham, at);
      runs.push([period.key, new Date(period.startMs).toISOString().slice(11, 16)]);
      at = period.endMs;
    }
    assert.deepEqual(runs, [
      ['2026040502', '12:15'],
      ['2026040503', '13:15'],
      ['2026040502', '14:00'],
      ['2026040503', '14:15'],
      ['2026040504', '15:15'],
    ]);
  });

  it('gives years and months by the local calendar', () => {
    assert.deepEqual(periodAt(format(UNIT_FORMATS.year, 'Europe/Berlin'), Date.UTC(2026, 5, 1)), {
      key: '2026',
      startMs: Date.UTC(2025, 11, 31, 23),
      endMs: Date.UTC(2026, 11, 31, 23),
    });
    // 2026-12-31 23:30 UTC is already 2027 in Berlin.
    assert.equal(
      periodAt(format(UNIT_FORMATS.year, 'Europe/Berlin'), Date.UTC(2026, 11, 31, 23, 30)).key,
      '2027',
    );
    assert.deepEqual(periodAt(format(UNIT_FORMATS.month, 'America/New_York'), Date.UTC(2028, 1, 15)), {
      key: '202802',
      startMs: Date.UTC(2028, 1, 1, 5),
      endMs: Date.UTC(2028, 2, 1, 5),
    });
    // March holds the spring-forward: 31 days less an hour.
    const march = periodAt(format(UNIT_FORMATS.month, 'America/New_York'), Date.UTC(2026, 2, 15));
    assert.deepEqual(march, {
      key: '202603',
      startMs: Date.UTC(2026, 2, 1, 5),
      endMs: Date.UTC(2026, 3, 1, 4),
    });
  });

  it("has one period for ever without a date token ('all')", () => {
    for (const zone of ZONES) {
      for (const nowMs of [0, Date.UTC(2026, 11, 1), Date.UTC(2999, 0, 1)]) {
        const period = periodAt(format(UNIT_FORMATS.none, zone), nowMs);
        assert.deepEqual(period, { key: 'all', startMs: -Infinity, endMs: Infinity });
      }
    }
  });

  it('refuses moments outside the years a four-digit {yyyy} numbers', () => {
    const yearly = format(UNIT_FORMATS.year);
    for (const nowMs of [Date.UTC(10000, 0, 1), Date.UTC(1500, 0, 1), Number.NaN])
      assert.throws(() => periodAt(yearly, nowMs), { code: 'INVALID_ARGUMENT' });
    assert.equal(periodAt(yearly, Date.UTC(9999, 11, 31, 23)).key, '9999');
  });
});

describe('renderId', () => {
  it('pads {seq:N} with zeros and writes {seq} as it is', () => {
    const padded = format('ORD-{yy}{MM}{dd}-{seq:8}', 'Asia/Kolkata');
    const period = periodAt(padded, Date.UTC(2026, 11, 1, 12));
    assert.equal(renderId(padded, period, 123), 'ORD-261201-00000123');
    assert.equal(renderId(padded, period, 123n), 'ORD-261201-00000123');
    assert.equal(renderId(padded, period, 1), 'ORD-261201-00000001');
    assert.equal(renderId(padded, period, 99_999_999n), 'ORD-261201-99999999');
    const plain = format('{yyyy}{MM}{dd}{HH}/{seq}', 'UTC');
    const hour = periodAt(plain, Date.UTC(2026, 11, 1, 9, 41));
    assert.equal(renderId(plain, hour, 7), '2026120109/7');
    assert.equal(renderId(plain, hour, 2n ** 63n - 1n), '2026120109/9223372036854775807');
    const numeric = format('{yyyy}{MM}{dd}{seq:6}');
    assert.equal(renderId(numeric, periodAt(numeric, Date.UTC(2026, 11, 1)), 123), '20261201000123');
    const yearly = format('{seq:3}.{yyyy}', 'Europe/Berlin');
    assert.equal(renderId(yearly, periodAt(yearly, Date.UTC(2026, 11, 31, 23, 30)), 5), '005.2027');
    const ever = format('N-{seq}');
    assert.equal(renderId(ever, periodAt(ever, 0), 42), 'N-42');
  });

  it('refuses a sequence outside 1 to maxSeq instead of writing a wider number', () => {
    const padded = format('{yyyy}-{seq:3}');
    const period = periodAt(padded, Date.UTC(2026, 0, 1));
    for (const seq of [0, 0n, -1, 1000, 1000n, 1.5, Number.NaN, 2 ** 60])
      assert.throws(() => renderId(padded, period, seq), { code: 'INTERNAL' }, String(seq));
    const plain = format('{yyyy}-{seq}');
    assert.throws(() => renderId(plain, period, 2n ** 63n), { code: 'INTERNAL' });
    assert.throws(() => renderId(plain, { key: '202601', startMs: 0, endMs: 1 }, 1), { code: 'INTERNAL' });
  });

  it('repeats {yy} text after 100 years, as documented, and {yyyy} does not', () => {
    const short = format('{yy}{MM}-{seq:4}');
    const long = format('{yyyy}{MM}-{seq:4}');
    const at = (ms: number, compiled: IdFormat) => renderId(compiled, periodAt(compiled, ms), 1);
    assert.equal(at(Date.UTC(2026, 5), short), at(Date.UTC(2126, 5), short));
    assert.notEqual(at(Date.UTC(2026, 5), long), at(Date.UTC(2126, 5), long));
  });

  it('renders a copy of a compiled format (not made by parseFormat) alike', () => {
    const compiled = format('X{yyyy}{MM}{dd}-{seq:2}', 'Europe/Berlin');
    const copy: IdFormat = { ...compiled, setting: { ...compiled.setting } };
    const period = periodAt(copy, Date.UTC(2026, 6, 1, 12));
    assert.equal(renderId(copy, period, 9), renderId(compiled, period, 9));
    assert.equal(renderId(copy, period, 9), 'X20260701-09');
    const elsewhere: IdFormat = {
      ...compiled,
      setting: { format: compiled.setting.format, timeZone: 'Mars/Base' },
    };
    assert.throws(() => periodAt(elsewhere, 0), { code: 'INVALID_ARGUMENT', message: /"Mars\/Base"/ });
  });

  for (const text of [
    'ORD-{yy}{MM}{dd}{HH}-{seq}',
    '#{seq}{yy}{MM}',
    '{yyyy}{MM}{seq:2}{dd}',
    '{seq:1}{yy}{MM}{dd}{HH}',
  ]) {
    it(`gives distinct numbers for distinct (period, seq) of ${text}`, () => {
      // Moments within about 3 years and small sequences, so that periods and digits collide often.
      const compiled = format(text, 'Pacific/Chatham');
      const limit = compiled.maxSeq < 500n ? Number(compiled.maxSeq) : 500;
      fc.assert(
        fc.property(
          fc.array(
            fc.tuple(
              fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2029, 0, 1) }),
              fc.integer({ min: 1, max: limit }),
            ),
            { minLength: 2, maxLength: 200 },
          ),
          (takes) => {
            const seen = new Map<string, string>();
            for (const [nowMs, seq] of takes) {
              const period = periodAt(compiled, nowMs);
              const id = renderId(compiled, period, seq);
              const what = `${period.key}/${seq}`;
              const before = seen.get(id);
              assert.ok(before === undefined || before === what, `${id} is ${before} and ${what}`);
              seen.set(id, what);
            }
          },
        ),
        { numRuns: propertyRuns(100) },
      );
    });
  }
});

describe('retryAfterSeconds', () => {
  it('answers whole seconds until the period ends, at least 1', () => {
    const period: Period = { key: '2026120113', startMs: 0, endMs: 10_000 };
    assert.equal(retryAfterSeconds(period, 0), 10);
    assert.equal(retryAfterSeconds(period, 1), 10);
    assert.equal(retryAfterSeconds(period, 999), 10);
    assert.equal(retryAfterSeconds(period, 1000), 9);
    assert.equal(retryAfterSeconds(period, 9_999), 1);
    assert.equal(retryAfterSeconds(period, 10_000), 1);
    assert.equal(retryAfterSeconds(period, 20_000), 1);
    const hourly = format(UNIT_FORMATS.hour, 'Asia/Kathmandu');
    const nowMs = Date.UTC(2026, 11, 1, 12, 14, 59, 500);
    assert.equal(retryAfterSeconds(periodAt(hourly, nowMs), nowMs), 1);
    assert.equal(retryAfterSeconds(periodAt(hourly, nowMs - 3000), nowMs - 3000), 4);
    assert.equal(retryAfterSeconds(periodAt(format(UNIT_FORMATS.none), 0), 0), Infinity);
  });
});
