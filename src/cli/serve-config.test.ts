import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isFrondError } from '../core/errors.js';
import { LEAF_EPOCH } from '../core/snowflake-layout.js';
import { parseServeArgs } from './serve.js';
import { currentHost, hostnameOrdinal, type ServeHost, serveConfig } from './serve-config.js';

const NOW = Date.parse('2026-12-02T00:00:00Z');
const host = (hostname: string): ServeHost => ({ hostname, now: NOW });
const config = (args: string[], hostname = 'laptop') =>
  serveConfig(parseServeArgs(['--data-dir', '/tmp/x', ...args], {}, NOW), host(hostname));

function refused(args: string[], pattern: RegExp, hostname = 'laptop'): void {
  assert.throws(
    () => config(args, hostname),
    (error: Error) => isFrondError(error) && error.code.startsWith('INVALID_') && pattern.test(error.message),
    args.join(' '),
  );
}

describe('serveConfig: the snowflake layout', () => {
  it("is Leaf's by default, and the flags' otherwise", () => {
    assert.equal(config([]).layout.bits, '41+10+12');
    assert.equal(config([]).layout.epoch, LEAF_EPOCH);
    const sony = config(['--snowflake-layout', '39+16+8', '--time-unit-ms', '10']).layout;
    assert.deepEqual(sony.spec(), {
      timeBits: 39,
      workerBits: 16,
      sequenceBits: 8,
      timeUnitMs: 10,
      epoch: LEAF_EPOCH,
    });
  });

  it('refuses a layout that cannot work, naming its flags', () => {
    refused(['--snowflake-layout', '40+10+12'], /^--snowflake-layout 40\+10\+12 has 62 bits/);
    refused(['--snowflake-layout', '41+22+0'], /^--snowflake-layout 41\+22\+0 has no sequence bit/);
    refused(['--snowflake-layout', 'leaf'], /^--snowflake-layout "leaf" is invalid/);
    refused(
      ['--snowflake-layout', '31+20+12'],
      /^--snowflake-layout 31\+20\+12 in 1 ms units from --epoch 1288834974657 ran out on 2010-11-28T22:14:18\.305Z: a layout must last at least 365 days from now; use more time bits or a larger --time-unit-ms/,
    );
  });

  it('checks --worker-id against the worker bits', () => {
    refused(['--worker-id', '1024'], /^--worker-id "1024" is invalid: use an integer from 0 to 1023$/);
    assert.equal(config(['--worker-id', '1023']).workerId, 1023);
    const wide = ['--snowflake-layout', '39+16+8', '--time-unit-ms', '10'];
    assert.equal(config([...wide, '--worker-id', '65535']).workerId, 65_535);
    refused(
      [...wide, '--worker-id', '65536'],
      /^--worker-id "65536" is invalid: use an integer from 0 to 65535 \(the 16 worker bits of --snowflake-layout 39\+16\+8\)$/,
    );
  });

  it('decodes with the layout with snowflake mode off, and then checks nothing of the time left', () => {
    const off = config(['--no-snowflake', '--snowflake-layout', '31+20+12']);
    assert.equal(off.layout.bits, '31+20+12');
    assert.equal(off.coordinator, undefined);
  });
});

describe('serveConfig: --worker-id-ordinal', () => {
  it("takes the worker ID from a StatefulSet pod's hostname, plus --worker-id-offset", () => {
    assert.equal(config(['--worker-id-ordinal'], 'frond-0').workerId, 0);
    assert.equal(config(['--worker-id-ordinal'], 'frond-7').workerId, 7);
    assert.equal(
      config(['--worker-id-ordinal'], 'id-service-eu-12.frond.prod.svc.cluster.local').workerId,
      12,
    );
    assert.equal(config(['--worker-id-ordinal', '--worker-id-offset', '100'], 'frond-7').workerId, 107);
    // Each pod of --workers 4 takes four IDs: pod 3 runs 12 to 15.
    assert.equal(config(['--worker-id-ordinal', '--workers', '4'], 'frond-3').workerId, 12);
    assert.equal(config(['--worker-id-ordinal'], 'frond-0').coordinator, undefined);
  });

  it('refuses a hostname without -N, an ordinal past the worker bits, and other worker-ID sources', () => {
    for (const name of ['frond', 'frond-', 'frond-7d4b9c-xk2p', 'frond-01', '-3', 'frond-3a', ''])
      refused(
        ['--worker-id-ordinal'],
        /^--worker-id-ordinal: hostname ".*" does not end in -N, as a StatefulSet pod's/,
        name,
      );
    refused(
      ['--worker-id-ordinal'],
      /^--worker-id-ordinal: hostname "frond-1024" gives worker ID 1024 \(ordinal 1024\), above 1023, the largest of 10 worker bits/,
      'frond-1024',
    );
    refused(
      ['--worker-id-ordinal', '--worker-id-offset', '1000', '--workers', '2'],
      /gives worker ID 1031 \(--worker-id-offset 1000 \+ ordinal 15 × --workers 2\), above 1023/,
      'frond-15',
    );
    assert.equal(
      config(['--worker-id-ordinal', '--snowflake-layout', '41+12+10'], 'frond-4000').workerId,
      4000,
      'wider worker bits take it',
    );
    refused(
      ['--worker-id-ordinal', '--worker-id', '3'],
      /^--worker-id and --worker-id-ordinal: pick one$/,
      'frond-1',
    );
    refused(
      ['--worker-id-ordinal', '--etcd', 'http://127.0.0.1:2379', '--name', 'x'],
      /^--worker-id-ordinal and --etcd: pick one$/,
      'frond-1',
    );
    refused(
      ['--worker-id-ordinal', '--zk', '127.0.0.1:2181'],
      /^--worker-id-ordinal and --zk: pick one$/,
      'frond-1',
    );
    refused(['--worker-id-offset', '5'], /^--worker-id-offset goes with --worker-id-ordinal$/);
  });

  it('reads HOSTNAME first, as Kubernetes and Docker set it, and the ordinal as a number', () => {
    assert.equal(currentHost({ HOSTNAME: 'frond-2' }).hostname, 'frond-2');
    assert.notEqual(currentHost({ HOSTNAME: ' ' }).hostname, ' ');
    assert.equal(hostnameOrdinal('a-b-c-42'), 42);
    assert.equal(hostnameOrdinal('frond-999999999'), 999_999_999);
  });
});
