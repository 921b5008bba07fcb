/**
 * Text output, checked against real output of the installed bpftrace 0.17 (program noted on each test; its
 * output pasted verbatim) where 0.17 and 0.26 agree, and against bpftrace 0.26's sources/tests where they differ
 * (each difference is in docs/compat.md). The one systematic difference: 0.17 prints a histogram header as
 * `@h: ` (trailing space), 0.26 as `@h:`; `v026` applies exactly that change to pasted 0.17 output.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SType } from '../../../src/lang/types.js';
import type { MapDump } from '../../../src/runtime/output/model.js';
import { barWidth, TextOutput, valueText } from '../../../src/runtime/output/text.js';
import {
  CaptureSink,
  count,
  histOf,
  I64,
  i64,
  int,
  keyedMap,
  lhistOf,
  STR,
  scalarMap,
  str,
  tuple,
  U64,
  u64,
} from './util.js';

const HIST: SType = { kind: 'hist', bits: 0 };
const LHIST = (min: number, max: number, step: number): SType => ({ kind: 'lhist', min, max, step });

/** bpftrace 0.17 → 0.26: histogram header lines lose their trailing space. */
function v026(s: string): string {
  return s.replace(/^(@[^\n]*): $/gm, '$1:');
}

function text(): { out: TextOutput; stdout: CaptureSink; stderr: CaptureSink } {
  const stdout = new CaptureSink();
  const stderr = new CaptureSink();
  return { out: new TextOutput(stdout, stderr), stdout, stderr };
}

function exitText(...dumps: MapDump[]): string {
  const t = text();
  t.out.exitMaps(dumps);
  return t.stdout.text;
}

function printText(dump: MapDump, opts?: { top?: number; div?: number }): string {
  const t = text();
  t.out.printMap(dump, opts);
  return t.stdout.text;
}

describe('log2 histograms (hist)', () => {
  it('negative, zero, one, ranges and an empty middle bucket', () => {
    // bpftrace 0.17: BEGIN { @=hist(-1); @=hist(0); @=hist(1); @=hist(2); @=hist(3); @=hist(7); @=hist(20);
    //   @=hist(20); @=hist(20); exit(); }
    const bt017 =
      '\n\n@: \n(..., 0)               1 |@@@@@@@@@@@@@@@@@                                   |\n[0]                    1 |@@@@@@@@@@@@@@@@@                                   |\n[1]                    1 |@@@@@@@@@@@@@@@@@                                   |\n[2, 4)                 2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@                  |\n[4, 8)                 1 |@@@@@@@@@@@@@@@@@                                   |\n[8, 16)                0 |                                                    |\n[16, 32)               3 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n';
    const got = exitText(scalarMap('@', HIST, histOf([-1, 0, 1, 2, 3, 7, 20, 20, 20])));
    assert.equal(got, v026(bt017));
  });

  it('bar lengths scale to the largest bucket in single precision', () => {
    // bpftrace 0.17: BEGIN { @=hist(1); @=hist(2) x3; @=hist(4) x7; exit(); }
    const bt017 =
      '\n\n@: \n[1]                    1 |@@@@@@@                                             |\n[2, 4)                 3 |@@@@@@@@@@@@@@@@@@@@@@                              |\n[4, 8)                 7 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n';
    const got = exitText(scalarMap('@', HIST, histOf([1, 2, 2, 2, 4, 4, 4, 4, 4, 4, 4])));
    assert.equal(got, v026(bt017));
    assert.equal(barWidth(1n, 3n), 17);
    assert.equal(barWidth(2n, 3n), 34);
    assert.equal(barWidth(0n, 0n), 0);
  });

  it('K/M/G suffixes', () => {
    // bpftrace 0.17: BEGIN { @=hist(1024); @=hist(1048576*3); @=hist(3000000000); exit(); }
    const bt017 =
      '\n\n@: \n[1K, 2K)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n[2K, 4K)               0 |                                                    |\n[4K, 8K)               0 |                                                    |\n[8K, 16K)              0 |                                                    |\n[16K, 32K)             0 |                                                    |\n[32K, 64K)             0 |                                                    |\n[64K, 128K)            0 |                                                    |\n[128K, 256K)           0 |                                                    |\n[256K, 512K)           0 |                                                    |\n[512K, 1M)             0 |                                                    |\n[1M, 2M)               0 |                                                    |\n[2M, 4M)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n[4M, 8M)               0 |                                                    |\n[8M, 16M)              0 |                                                    |\n[16M, 32M)             0 |                                                    |\n[32M, 64M)             0 |                                                    |\n[64M, 128M)            0 |                                                    |\n[128M, 256M)           0 |                                                    |\n[256M, 512M)           0 |                                                    |\n[512M, 1G)             0 |                                                    |\n[1G, 2G)               0 |                                                    |\n[2G, 4G)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n';
    const got = exitText(scalarMap('@', HIST, histOf([1024, 1048576 * 3, 3000000000])));
    assert.equal(got, v026(bt017));
  });

  it('huge values use P and E suffixes (0.26; 0.17 puts every value >= 2^32 in [2G, 4G), see docs/compat.md)', () => {
    // bpftrace 0.17 prints `[2G, 4G) 3` for BEGIN { @=hist(1<<50); @=hist(1<<62); @=hist(2^63-1) }.
    const got = printText(scalarMap('@', HIST, histOf([1n << 50n, 1n << 62n, (1n << 63n) - 1n])));
    assert.equal(
      got,
      '@:\n' +
        '[1P, 2P)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n' +
        '[2P, 4P)               0 |                                                    |\n' +
        '[4P, 8P)               0 |                                                    |\n' +
        '[8P, 16P)              0 |                                                    |\n' +
        '[16P, 32P)             0 |                                                    |\n' +
        '[32P, 64P)             0 |                                                    |\n' +
        '[64P, 128P)            0 |                                                    |\n' +
        '[128P, 256P)           0 |                                                    |\n' +
        '[256P, 512P)           0 |                                                    |\n' +
        '[512P, 1E)             0 |                                                    |\n' +
        '[1E, 2E)               0 |                                                    |\n' +
        '[2E, 4E)               0 |                                                    |\n' +
        '[4E, 8E)               2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n' +
        '\n',
    );
  });

  it('only negative values', () => {
    // bpftrace 0.17: BEGIN { @=hist(-5); @=hist(-100); exit(); }
    const bt017 = '\n\n@: \n(..., 0)               2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n';
    assert.equal(exitText(scalarMap('@', HIST, histOf([-5, -100]))), v026(bt017));
  });

  it('a zeroed histogram prints its header and a blank line', () => {
    // bpftrace 0.17: BEGIN { @=hist(5); zero(@); exit(); }
    const bt017 = '\n\n@: \n\n';
    const zeroed = { kind: 'hist' as const, bits: 0, buckets: new Map([[4, 0n]]) };
    assert.equal(exitText(scalarMap('@', HIST, zeroed)), v026(bt017));
  });

  it('sub-buckets: hist(n, 2)', () => {
    const got = printText(scalarMap('@', { kind: 'hist', bits: 2 }, histOf([0, 3, 4, 7, 8, 9, 10, 15, 16], 2)));
    assert.equal(
      got,
      '@:\n' +
        '[0]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n' +
        '[1]                    0 |                                                    |\n' +
        '[2]                    0 |                                                    |\n' +
        '[3]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n' +
        '[4]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n' +
        '[5]                    0 |                                                    |\n' +
        '[6]                    0 |                                                    |\n' +
        '[7]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n' +
        '[8, 10)                2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n' +
        '[10, 12)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n' +
        '[12, 14)               0 |                                                    |\n' +
        '[14, 16)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n' +
        '[16, 20)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n' +
        '\n',
    );
  });

  it('keyed histograms are ordered by their total count, each followed by a blank line', () => {
    // bpftrace 0.17: BEGIN { @[3]=hist(5); @[3]=hist(5); @[1]=hist(100); @[2]=hist(1); @[2]=hist(1);
    //   @[2]=hist(1); exit(); }
    const bt017 =
      '\n\n@[1]: \n[64, 128)              1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n@[3]: \n[4, 8)                 2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n@[2]: \n[1]                    3 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n';
    const m = keyedMap('@', [I64], HIST, [
      [[i64(3)], histOf([5, 5])],
      [[i64(1)], histOf([100])],
      [[i64(2)], histOf([1, 1, 1])],
    ]);
    assert.equal(exitText(m), v026(bt017));
  });

  it('print(@, top, div) on a keyed histogram keeps the last `top` keys and divides counts', () => {
    // bpftrace 0.17: BEGIN { @[1]=hist(10); @[2]=hist(20) x2; @[3]=hist(30) x3; print(@, 2, 2); clear(@); exit(); }
    const bt017 =
      '@[2]: \n[16, 32)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n@[3]: \n[16, 32)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n';
    const m = keyedMap('@', [I64], HIST, [
      [[i64(1)], histOf([10])],
      [[i64(2)], histOf([20, 20])],
      [[i64(3)], histOf([30, 30, 30])],
    ]);
    assert.equal(printText(m, { top: 2, div: 2 }), v026(bt017));
  });

  it('equal totals keep key order (bpftrace 0.26 tests/runtime/call print_hist_with_top_arg: top 2 of 1,2,3 is 2,3)', () => {
    const m = keyedMap('@', [I64], HIST, [
      [[i64(3)], histOf([30])],
      [[i64(1)], histOf([10])],
      [[i64(2)], histOf([20])],
    ]);
    assert.equal(
      printText(m, { top: 2 }),
      '@[2]:\n[16, 32)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n' +
        '@[3]:\n[16, 32)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n',
    );
  });

  it('all-zero rows after div print empty bars (bpftrace would compute 0/0)', () => {
    const got = printText(scalarMap('@', HIST, histOf([5])), { div: 10 });
    assert.equal(got, '@:\n[4, 8)                 0 |                                                    |\n\n');
  });
});

describe('linear histograms (lhist)', () => {
  it('underflow, ranges and overflow', () => {
    // bpftrace 0.17: BEGIN { @=lhist(2,0,10,2); @=lhist(3,0,10,2); @=lhist(7,0,10,2); @=lhist(-1,0,10,2);
    //   @=lhist(11,0,10,2); exit(); }
    const bt017 =
      '\n\n@: \n(..., 0)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n[0, 2)                 0 |                                                    |\n[2, 4)                 2 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n[4, 6)                 0 |                                                    |\n[6, 8)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n[8, 10)                0 |                                                    |\n[10, ...)              1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n\n';
    assert.equal(exitText(scalarMap('@', LHIST(0, 10, 2), lhistOf([2, 3, 7, -1, 11], 0, 10, 2))), v026(bt017));
  });

  it('K suffixes with a step of 1024', () => {
    // bpftrace 0.17: BEGIN { @=lhist(0,0,5120,1024); @=lhist(3000,0,5120,1024); @=lhist(6000,0,5120,1024); exit(); }
    const bt017 =
      '\n\n@: \n[0, 1K)                1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n[1K, 2K)               0 |                                                    |\n[2K, 3K)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n[3K, 4K)               0 |                                                    |\n[4K, 5K)               0 |                                                    |\n[5K, ...)              1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n';
    assert.equal(exitText(scalarMap('@', LHIST(0, 5120, 1024), lhistOf([0, 3000, 6000], 0, 5120, 1024))), v026(bt017));
  });

  it('no suffixes when the step is not a multiple of 1024 (0.26; 0.17 prints 625K)', () => {
    const got = printText(
      scalarMap('@', LHIST(610000, 670000, 10000), lhistOf([615000, 645000], 610000, 670000, 10000)),
    );
    assert.equal(
      got,
      '@:\n' +
        '[610000, 620000)       1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n' +
        '[620000, 630000)       0 |                                                    |\n' +
        '[630000, 640000)       0 |                                                    |\n' +
        '[640000, 650000)       1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n' +
        '\n',
    );
  });

  it('underflow only', () => {
    // bpftrace 0.17: BEGIN { @=lhist(5,10,110,10); exit(); }
    const bt017 = '\n\n@: \n(..., 10)              1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n';
    assert.equal(exitText(scalarMap('@', LHIST(10, 110, 10), lhistOf([5], 10, 110, 10))), v026(bt017));
  });

  it('overflow only', () => {
    // bpftrace 0.17: BEGIN { @=lhist(200,0,100,10); exit(); }
    const bt017 = '\n\n@: \n[100, ...)             1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n';
    assert.equal(exitText(scalarMap('@', LHIST(0, 100, 10), lhistOf([200], 0, 100, 10))), v026(bt017));
  });

  it('a value equal to max lands in the overflow bucket', () => {
    // bpftrace 0.17: BEGIN { @=lhist(100,0,100,10); @=lhist(99,0,100,10); exit(); }
    const bt017 =
      '\n\n@: \n[90, 100)              1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n[100, ...)             1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n';
    assert.equal(exitText(scalarMap('@', LHIST(0, 100, 10), lhistOf([100, 99], 0, 100, 10))), v026(bt017));
  });

  it('step 1: single-value rows [n]', () => {
    const got = printText(scalarMap('@', LHIST(0, 5, 1), lhistOf([1, 3], 0, 5, 1)));
    assert.equal(
      got,
      '@:\n' +
        '[1]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n' +
        '[2]                    0 |                                                    |\n' +
        '[3]                    1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n' +
        '\n',
    );
  });
});

describe('maps', () => {
  it('count maps sort by value; equal values by key', () => {
    // bpftrace 0.17: BEGIN { @[5]=count(); @[1]=count(); @[1]=count(); @[3]=count(); @[2]=count(); @[2]=count();
    //   exit(); }  (equal counts come out in hash order in bpftrace; this run happened to match key order)
    const bt017 = '\n\n@[3]: 1\n@[5]: 1\n@[1]: 2\n@[2]: 2\n';
    const m = keyedMap('@', [I64], { kind: 'count' }, [
      [[i64(5)], count(1)],
      [[i64(1)], count(2)],
      [[i64(3)], count(1)],
      [[i64(2)], count(2)],
    ]);
    assert.equal(exitText(m), bt017);
  });

  it('several maps at exit: name order, no blank line between non-histogram maps', () => {
    // bpftrace 0.17 (first lines of): BEGIN { @[1] = count(); @[2] = count(); @[2] = count(); @h = hist(5);
    //   @s = stats(3); exit(); }  → "\n\n@[1]: 1\n@[2]: 2\n@h: \n[4, 8) ...|\n\n@s: count 1, average 3, total 3\n\n"
    const got = exitText(
      scalarMap('@s', { kind: 'stats', signed: true }, { kind: 'stats', count: 1n, total: 3n, signed: true }),
      scalarMap('@h', HIST, histOf([5])),
      keyedMap('@', [I64], { kind: 'count' }, [
        [[i64(2)], count(2)],
        [[i64(1)], count(1)],
      ]),
    );
    assert.equal(
      got,
      '\n\n@[1]: 1\n@[2]: 2\n@h:\n[4, 8)                 1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n' +
        '@s: { .count = 1, .average = 3, .total = 3 }\n',
    );
  });

  it('scalar values: string, tuple, bool, min/max/sum, signed', () => {
    // bpftrace 0.17 printed @mn: -5, @mx: 5, @s: str, @sm: -3, @t: (1, a) for the same values.
    const got = exitText(
      scalarMap('@t', { kind: 'tuple', elems: [I64, STR] }, tuple(i64(1), str('a'))),
      scalarMap('@sm', { kind: 'sum', signed: true }, { kind: 'sum', value: -3n, signed: true }),
      scalarMap('@s', STR, str('str')),
      scalarMap('@mx', { kind: 'max', signed: true }, { kind: 'max', value: 5n, signed: true }),
      scalarMap('@mn', { kind: 'min', signed: true }, { kind: 'min', value: -5n, signed: true }),
      scalarMap('@b', { kind: 'bool' }, { kind: 'bool', value: true }),
    );
    assert.equal(got, '\n\n@b: true\n@mn: -5\n@mx: 5\n@s: str\n@sm: -3\n@t: (1, a)\n');
  });

  it('multi-key maps print keys without parentheses', () => {
    // bpftrace 0.17: BEGIN { @mk[1, "x"] = 3; exit(); } → @mk[1, x]: 3
    const m = keyedMap('@mk', [I64, STR], I64, [[[i64(1), str('x')], i64(3)]]);
    assert.equal(printText(m), '@mk[1, x]: 3\n');
  });

  it('int-valued maps sort by value; equal values by signed key', () => {
    // bpftrace 0.17: BEGIN { @[-1]=5; @[10]=5; @[2]=5; exit(); } → @[-1]: 5 / @[2]: 5 / @[10]: 5
    const m = keyedMap('@', [I64], I64, [
      [[i64(10)], i64(5)],
      [[i64(2)], i64(5)],
      [[i64(-1)], i64(5)],
    ]);
    assert.equal(printText(m), '@[-1]: 5\n@[2]: 5\n@[10]: 5\n');
  });

  it('string-valued maps sort by key', () => {
    // bpftrace 0.17: BEGIN { @["b"]="x"; @["a"]="y"; @["c"]="a"; exit(); } → @[a]: y / @[b]: x / @[c]: a
    const m = keyedMap('@', [STR], STR, [
      [[str('b')], str('x')],
      [[str('a')], str('y')],
      [[str('c')], str('a')],
    ]);
    assert.equal(printText(m), '@[a]: y\n@[b]: x\n@[c]: a\n');
  });

  it('tuple keys sort field by field (int fields signed, strings bytewise)', () => {
    const m = keyedMap('@', [I64, STR], STR, [
      [[i64(2), str('b')], str('v')],
      [[i64(1), str('z')], str('v')],
      [[i64(-1), str('a')], str('v')],
      [[i64(2), str('a')], str('v')],
      [[i64(1), str('ab')], str('v')],
    ]);
    assert.equal(printText(m), '@[-1, a]: v\n@[1, ab]: v\n@[1, z]: v\n@[2, a]: v\n@[2, b]: v\n');
  });

  it('min/max maps sort as u64 (negative values last), as bpftrace 0.26', () => {
    const m = keyedMap('@', [I64], { kind: 'min', signed: true }, [
      [[i64(1)], { kind: 'min', value: -5n, signed: true }],
      [[i64(2)], { kind: 'min', value: 3n, signed: true }],
      [[i64(3)], { kind: 'min', value: -1n, signed: true }],
    ]);
    assert.equal(printText(m), '@[2]: 3\n@[1]: -5\n@[3]: -1\n');
  });

  it('stats maps: 0.26 record form, ordered by average', () => {
    // bpftrace 0.17: BEGIN { @["a"]=stats(10); @["a"]=stats(5); @["b"]=stats(-3); exit(); }
    //   → @[b]: count 1, average -3, total -3 / @[a]: count 2, average 7, total 15 (and a blank line)
    // bpftrace 0.26 (tests/runtime/signed_ints): @: { .count = 3, .average = -3, .total = -10 }
    const m = keyedMap('@', [STR], { kind: 'stats', signed: true }, [
      [[str('a')], { kind: 'stats', count: 2n, total: 15n, signed: true }],
      [[str('b')], { kind: 'stats', count: 1n, total: -3n, signed: true }],
    ]);
    assert.equal(
      exitText(m),
      '\n\n@[b]: { .count = 1, .average = -3, .total = -3 }\n@[a]: { .count = 2, .average = 7, .total = 15 }\n',
    );
    const s = scalarMap('@', { kind: 'stats', signed: true }, { kind: 'stats', count: 3n, total: -10n, signed: true });
    assert.equal(printText(s), '@: { .count = 3, .average = -3, .total = -10 }\n');
  });

  it('avg: integer average truncated toward zero', () => {
    // bpftrace 0.17: BEGIN { @=avg(-7); @=avg(2); exit(); } → @: -2
    const m = scalarMap('@', { kind: 'avg', signed: true }, { kind: 'avg', count: 2n, total: -5n, signed: true });
    assert.equal(printText(m), '@: -2\n');
  });

  it('print(@, top, div) on a sum map', () => {
    // bpftrace 0.17: BEGIN { @[1]=sum(10); @[2]=sum(200); @[3]=sum(35); print(@, 2, 10); clear(@); exit(); }
    //   → "@[3]: 3\n@[2]: 20\n" before the exit lines
    const m = keyedMap('@', [I64], { kind: 'sum', signed: true }, [
      [[i64(1)], { kind: 'sum', value: 10n, signed: true }],
      [[i64(2)], { kind: 'sum', value: 200n, signed: true }],
      [[i64(3)], { kind: 'sum', value: 35n, signed: true }],
    ]);
    assert.equal(printText(m, { top: 2, div: 10 }), '@[3]: 3\n@[2]: 20\n');
  });

  it('print(@, top, div) on an avg map (bpftrace 0.26 tests/runtime/outputs/print_avg_map_args.txt)', () => {
    const avg = (n: number) => ({ kind: 'avg' as const, count: 1n, total: BigInt(n), signed: true });
    const m = keyedMap('@', [STR], { kind: 'avg', signed: true }, [
      [[str('a')], avg(10)],
      [[str('b')], avg(20)],
      [[str('c')], avg(30)],
      [[str('d')], avg(40)],
    ]);
    assert.equal(printText(m, { top: 2, div: 10 }), '@[c]: 3\n@[d]: 4\n');
    assert.equal(printText(m, { top: 10, div: 10 }), '@[a]: 1\n@[b]: 2\n@[c]: 3\n@[d]: 4\n');
  });

  it('empty maps print nothing (0.26), exit still prints two newlines', () => {
    const empty = keyedMap('@x', [I64], { kind: 'count' }, []);
    assert.equal(printText(empty), '');
    assert.equal(exitText(empty), '\n\n');
    assert.equal(exitText(), '\n\n');
  });

  it('unsigned and sized ints print in range; symbols print as themselves', () => {
    const m = keyedMap('@', [U64], I64, [
      [[u64(-1n)], int(-1, 4, true)],
      [[int(300, 1, false)], { kind: 'int', value: 0xffff0000n, signed: false, size: 8, symbol: '0xffff0000' }],
    ]);
    assert.equal(printText(m), '@[18446744073709551615]: -1\n@[44]: 0xffff0000\n');
  });
});

describe('values, notices', () => {
  it('print(value) of ints, strings, tuples, bools', () => {
    // bpftrace 0.17: BEGIN { print(123); print("abc"); print((1, "x")); } → 123 / abc / (1, x)
    const t = text();
    t.out.printValue(i64(123));
    t.out.printValue(str('abc'));
    t.out.printValue(tuple(i64(1), str('x')));
    t.out.printValue({ kind: 'bool', value: false });
    t.out.printValue({ kind: 'none' });
    assert.equal(t.stdout.text, '123\nabc\n(1, x)\nfalse\nnull\n');
  });

  it('valueText of nested tuples', () => {
    assert.equal(valueText(tuple(i64(1), tuple(str('a'), u64(2)), { kind: 'bool', value: true })), '(1, (a, 2), true)');
  });

  it('printf and time text go to stdout unchanged', () => {
    const t = text();
    t.out.printf('hi 5\n');
    t.out.time('12:00:00\n');
    t.out.join('a b');
    assert.equal(t.stdout.text, 'hi 5\n12:00:00\na b\n');
  });

  it('Attached N probe(s) and Lost N events go to stderr (bpftrace 0.26 TextOutput)', () => {
    const t = text();
    t.out.printf('x');
    t.out.attachedProbes(1);
    t.out.attachedProbes(3);
    t.out.lostEvents(7n);
    assert.equal(t.stderr.text, 'Attached 1 probe\nAttached 3 probes\nLost 7 events\n');
    assert.equal(t.stdout.text, 'x');
    assert.ok(t.stdout.flushes >= 1, 'stdout is flushed before stderr notices');
  });
});
