/** softirqs (src/tools/softirqs.ts): bcc's formats from map dumps and live runs (timer and RCU softirqs). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MapDump } from '../../src/runtime/output/model.js';
import { formatInterval, vecToName } from '../../src/tools/softirqs.js';
import { liveSkipReason, runBpfscope } from './helpers.js';
import { histDump } from './maps.js';

describe('softirqs output (bcc tools/softirqs.py)', () => {
  const base = { events: false, dist: false, nanoseconds: false, timestamp: false };
  const sums: MapDump = {
    name: '@dist',
    keyTypes: [],
    valueType: { kind: 'int', size: 8, signed: false } as never,
    entries: [
      {
        key: [{ kind: 'int', value: 1n, signed: false, size: 4 }],
        value: { kind: 'sum', value: 5_500n, signed: false },
      },
      {
        key: [{ kind: 'int', value: 9n, signed: false, size: 4 }],
        value: { kind: 'sum', value: 12_345n, signed: false },
      },
    ],
  };

  it('vector names as the kernel names them', () => {
    assert.deepEqual([0, 1, 3, 9, 10].map(vecToName), ['hi', 'timer', 'net_rx', 'rcu', '10']);
  });

  it('"%-16s %11s" table sorted by time', () => {
    assert.equal(
      formatInterval({ readMap: () => sums }, base),
      '\nSOFTIRQ          TOTAL_usecs\nrcu                       12\ntimer                      5\n',
    );
  });

  it('-d sections "softirq = <name>"', () => {
    const dump = histDump('dist', new Map([[1n, [3, 3]]]));
    assert.equal(
      formatInterval({ readMap: () => dump }, { ...base, dist: true }),
      '\n\nsoftirq = timer\n' +
        '     usecs               : count     distribution\n' +
        '         0 -> 1          : 0        |                                        |\n' +
        '         2 -> 3          : 2        |****************************************|\n',
    );
  });
});

describe('softirqs on the live kernel', () => {
  const skip = liveSkipReason();

  it('the timer softirq runs within a second; -C counts it', { skip }, async () => {
    const r = await runBpfscope(['softirqs', '1', '1']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^Tracing soft irq event time\.\.\. Hit Ctrl-C to end\.\n\nSOFTIRQ {10}TOTAL_usecs\n/);
    assert.match(r.stdout, /\ntimer {12}[ \d]{10}\d\n/);
    const c = await runBpfscope(['softirqs', '-C', '1', '1']);
    assert.equal(c.code, 0, c.stderr);
    assert.match(c.stdout, /\nSOFTIRQ {10}TOTAL_count\n/);
    assert.match(c.stdout, /\ntimer +[1-9]\d*\n/);
  });

  it('-d -N: nanosecond histograms per softirq', { skip }, async () => {
    const r = await runBpfscope(['softirqs', '-dN', '1', '1']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /\n\nsoftirq = timer\n {5}nsecs {15}: count {5}distribution\n/);
  });
});
