import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  buildSeries,
  reduceTseriesSlots,
  type TseriesValue,
  tseriesJson,
  tseriesText,
} from '../../../src/runtime/output/tseries.js';
import type { Target } from '../../../src/lang/target.js';
import { compileErrors, ONE_CPU_TARGET } from '../../helpers/compile.js';
import { bpfscopeSkipReason, runTool } from '../../helpers/cli.js';

/** One per-CPU slot `{value, meta, epoch}`. */
function slot(value: bigint, meta: bigint, epoch: bigint): Buffer {
  const b = Buffer.alloc(24);
  b.writeBigUInt64LE(BigInt.asUintN(64, value), 0);
  b.writeBigUInt64LE(BigInt.asUintN(64, meta), 8);
  b.writeBigUInt64LE(epoch, 16);
  return b;
}

describe('tseries CPU reduction (bpftrace util/tseries.cpp)', () => {
  it('keeps the latest epoch of the CPUs and combines the slots of that epoch', () => {
    // none: the slot written last (larger timestamp in meta) wins
    assert.deepEqual(reduceTseriesSlots([slot(7n, 100n, 3n), slot(9n, 200n, 3n), slot(1n, 300n, 2n)], 'none', false), [
      3n,
      9n,
    ]);
    assert.deepEqual(reduceTseriesSlots([slot(6n, 2n, 4n), slot(-1n, 1n, 4n)], 'avg', true), [4n, 1n]);
    assert.deepEqual(reduceTseriesSlots([slot(5n, 1n, 4n), slot(-3n, 1n, 4n)], 'min', true), [4n, -3n]);
    assert.deepEqual(reduceTseriesSlots([slot(5n, 1n, 4n), slot(8n, 1n, 4n)], 'max', false), [4n, 8n]);
    assert.deepEqual(reduceTseriesSlots([slot(5n, 0n, 4n), slot(8n, 0n, 4n)], 'sum', false), [4n, 13n]);
    // epoch 0: never written
    assert.deepEqual(reduceTseriesSlots([slot(5n, 1n, 0n), slot(0n, 0n, 0n)], 'sum', false), [0n, 0n]);
  });
});

function series(points: [bigint, bigint][], count: number, signed = false): TseriesValue {
  return { kind: 'tseries', interval: 100_000_000, count, signed, points: new Map(points) };
}

describe('tseries printing (bpftrace output/text.cpp, json.cpp)', () => {
  it('draws the window ending at the last epoch, with - for empty intervals', () => {
    const s = buildSeries(
      series(
        [
          [3n, 5n],
          [4n, 0n],
        ],
        4,
      ),
      6n,
    );
    const prevTz = process.env.TZ;
    process.env.TZ = 'UTC';
    try {
      assert.equal(
        tseriesText(s),
        [
          '             0                                                   5',
          'hh:mm:ss.ms  |___________________________________________________|',
          '00:00:00.300 |                                                   * 5',
          '00:00:00.400 *                                                   | 0',
          '00:00:00.500 |                                                   | -',
          '00:00:00.600 |                                                   | -',
          '             v___________________________________________________v',
          '             0                                                   5',
          '',
        ].join('\n'),
      );
    } finally {
      if (prevTz === undefined) delete process.env.TZ;
      else process.env.TZ = prevTz;
    }
    assert.equal(
      tseriesJson(s),
      '[{"interval_start":"1970-01-01 00:00:00.300000000","value":5},' +
        '{"interval_start":"1970-01-01 00:00:00.400000000","value":0}]',
    );
  });

  it('marks zero with . when the range spans it, and widens a flat range by one', () => {
    const s = buildSeries(
      series(
        [
          [1n, -2n],
          [2n, 2n],
        ],
        2,
        true,
      ),
      2n,
    );
    const lines = tseriesText(s).split('\n');
    assert.equal(lines[2]!.slice(13), '*                         .                         | -2');
    assert.equal(lines[3]!.slice(13), '|                         .                         * 2');
    const flat = tseriesText(buildSeries(series([[5n, 9n]], 1), 5n)).split('\n');
    assert.equal(flat[0], '                   8                                                  10');
    assert.equal(flat[1], 'hh:mm:ss.ns        |___________________________________________________|');
    assert.equal(tseriesText(buildSeries(series([], 5), 0n)), '<no data>');
  });
});

const target: Target = ONE_CPU_TARGET;

describe('tseries() checks (bpftrace pre_type_check.cpp wording)', () => {
  it('refuses bad intervals, counts and aggregations', () => {
    assert.deepEqual(compileErrors('BEGIN { @ = tseries(1, 0, 5); }', target), [
      '1:24: tseries() interval_ns must be >= 1 (0 provided)',
    ]);
    assert.deepEqual(compileErrors('BEGIN { @ = tseries(1, 1s, 1000001); }', target), [
      '1:28: tseries() num_intervals must be < 1000000 (1000001 provided)',
    ]);
    assert.deepEqual(compileErrors('BEGIN { @ = tseries(1, 1s, 5, "median"); }', target), [
      '1:31: tseries() expects one of the following aggregation functions: avg, max, min, sum ("median" provided)',
    ]);
    assert.deepEqual(compileErrors('BEGIN { @ = tseries(1, 1s, 5); @ = tseries(1, 1s, 6); }', target), [
      '1:32: Different tseries bounds in a single map unsupported',
    ]);
  });
});

describe('tseries() on the kernel', () => {
  it('records a signed zigzag on the BPFTRACE_DUMMY_TS_MAP clock (bpftrace docs/stdlib.md example two)', async (t) => {
    const skip = bpfscopeSkipReason();
    if (skip) return t.skip(skip);
    const prog =
      'BEGIN { @dir = 1; @c = -2; @ts = (uint64)100ms; } ' +
      'i:ms:1 { $i = 0; while ($i < 6) { @ = tseries(@c, 100ms, 6); @ts += 100ms; @c += @dir; $i++; ' +
      'if (@c > 2) { @dir = -1; @c = 1 } } clear(@ts); clear(@c); clear(@dir); exit(); }';
    const r = await runTool('bpfscope', ['-e', prog], { env: { BPFTRACE_DUMMY_TS_MAP: '@ts', TZ: 'UTC' } });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout,
      [
        '',
        '',
        '@:',
        '             -2                                                  2',
        'hh:mm:ss.ms  |___________________________________________________|',
        '00:00:00.100 *                         .                         | -2',
        '00:00:00.200 |            *            .                         | -1',
        '00:00:00.300 |                         *                         | 0',
        '00:00:00.400 |                         .            *            | 1',
        '00:00:00.500 |                         .                         * 2',
        '00:00:00.600 |                         .            *            | 1',
        '             v___________________________________________________v',
        '             -2                                                  2',
        '',
        '',
      ].join('\n'),
    );
    const j = await runTool('bpfscope', ['-f', 'json', '-e', prog], { env: { BPFTRACE_DUMMY_TS_MAP: '@ts' } });
    assert.equal(j.code, 0, j.stderr);
    const line = j.stdout.split('\n').find((l) => l.includes('"tseries"'));
    assert.deepEqual(JSON.parse(line!), {
      type: 'tseries',
      data: {
        '@': [-2, -1, 0, 1, 2, 1].map((value, i) => ({
          interval_start: `1970-01-01 00:00:00.${i + 1}00000000`,
          value,
        })),
      },
    });
  });
});
