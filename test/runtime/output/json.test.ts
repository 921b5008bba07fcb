/**
 * `-f json` output. Expected lines follow bpftrace 0.26 (src/output/json.cpp spacing; tests/runtime/json-output
 * and tests/runtime/outputs/*.json for content); where 0.17's real output (program noted) agrees byte for byte it
 * is pasted as is. Differences from 0.17 are in docs/compat.md.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SType } from '../../../src/lang/types.js';
import { JsonOutput, jsonInt, jsonString } from '../../../src/runtime/output/json.js';
import type { MapDump } from '../../../src/runtime/output/model.js';
import { CaptureSink, count, histOf, I64, i64, keyedMap, lhistOf, STR, scalarMap, str, tuple, u64 } from './util.js';

const HIST: SType = { kind: 'hist', bits: 0 };

function json(): { out: JsonOutput; sink: CaptureSink } {
  const sink = new CaptureSink();
  return { out: new JsonOutput(sink), sink };
}

function printJson(dump: MapDump, opts?: { top?: number; div?: number }): string {
  const j = json();
  j.out.printMap(dump, opts);
  return j.sink.text;
}

describe('json messages', () => {
  it('printf, value, time, attached_probes and lost_events records', () => {
    // bpftrace 0.17 -f json: BEGIN { printf("hi %d\n", 5); print(123); print("abc"); print((1, "x")); }
    //   → {"type": "printf", "data": "hi 5\n"} / {"type": "value", "data": 123} / ... "abc"} / ... [1,"x"]}
    const j = json();
    j.out.attachedProbes(1);
    j.out.printf('hi 5\n');
    j.out.printValue(i64(123));
    j.out.printValue(str('abc'));
    j.out.printValue(tuple(i64(1), str('x')));
    j.out.printValue({ kind: 'bool', value: true });
    j.out.time('12:34:56\n');
    j.out.lostEvents(3);
    j.out.exitMaps([]);
    assert.equal(
      j.sink.text,
      '{"type": "attached_probes", "count": 1, "data": {"probes": 1}}\n' +
        '{"type": "printf", "data": "hi 5\\n"}\n' +
        '{"type": "value", "data": 123}\n' +
        '{"type": "value", "data": "abc"}\n' +
        '{"type": "value", "data": [1,"x"]}\n' +
        '{"type": "value", "data": true}\n' +
        '{"type": "time", "data": "12:34:56\\n"}\n' +
        '{"type": "lost_events", "count": 3, "data": {"events": 3}}\n',
    );
  });

  it('string escapes', () => {
    // bpftrace 0.17 -f json: BEGIN { printf("a\"b\\c\td\x01e\n"); } → {"type": "printf", "data": "a\"b\\c\td\u0001e\n"}
    const j = json();
    j.out.printf('a"b\\c\td\x01e\n');
    assert.equal(j.sink.text, '{"type": "printf", "data": "a\\"b\\\\c\\td\\u0001e\\n"}\n');
    assert.equal(jsonString('\r\x1f\x7f é'), '"\\r\\u001f\x7f é"');
  });

  it('integers a double cannot hold exactly become strings (0.26)', () => {
    assert.equal(jsonInt(9007199254740992n), '9007199254740992');
    assert.equal(jsonInt(9007199254740993n), '"9007199254740993"');
    assert.equal(jsonInt(9223372036854775807n), '"9223372036854775807"');
    assert.equal(jsonInt(-9223372036854775808n), '-9223372036854775808');
    assert.equal(jsonInt(18446744073709551615n), '"18446744073709551615"');
    const j = json();
    j.out.printValue(u64(-1n));
    assert.equal(j.sink.text, '{"type": "value", "data": "18446744073709551615"}\n');
  });
});

describe('json maps', () => {
  it('scalar and keyed maps', () => {
    // bpftrace 0.17 -f json: @s = "str"; @t = (1, "a"); @mk[1, "x"] = 3; @mn = min(-5)
    assert.equal(printJson(scalarMap('@s', STR, str('str'))), '{"type": "map", "data": {"@s": "str"}}\n');
    assert.equal(
      printJson(scalarMap('@t', { kind: 'tuple', elems: [I64, STR] }, tuple(i64(1), str('a')))),
      '{"type": "map", "data": {"@t": [1,"a"]}}\n',
    );
    assert.equal(
      printJson(keyedMap('@mk', [I64, STR], I64, [[[i64(1), str('x')], i64(3)]])),
      '{"type": "map", "data": {"@mk": {"1,x": 3}}}\n',
    );
    assert.equal(
      printJson(scalarMap('@mn', { kind: 'min', signed: true }, { kind: 'min', value: -5n, signed: true })),
      '{"type": "map", "data": {"@mn": -5}}\n',
    );
    // bpftrace 0.26 tests/runtime/outputs/map.json, spaced as json.cpp writes it
    assert.equal(
      printJson(
        keyedMap('@map', [STR], I64, [
          [[str('key2')], i64(3)],
          [[str('key1')], i64(2)],
        ]),
      ),
      '{"type": "map", "data": {"@map": {"key1": 2, "key2": 3}}}\n',
    );
  });

  it('keys lose all spaces (0.26: "a b" → "ab"; 0.17 kept them)', () => {
    const m = keyedMap('@m', [STR], I64, [
      [[str('k')], i64(1)],
      [[str('a b')], i64(2)],
    ]);
    assert.equal(printJson(m), '{"type": "map", "data": {"@m": {"k": 1, "ab": 2}}}\n');
  });

  it('scalar string with escapes (0.26 tests/runtime/outputs/scalar_str.json)', () => {
    assert.equal(
      printJson(scalarMap('@scalar_str', STR, str('a b \n d e'))),
      '{"type": "map", "data": {"@scalar_str": "a b \\n d e"}}\n',
    );
  });

  it('stats and avg maps use type "stats"', () => {
    // bpftrace 0.17 -f json: BEGIN { @s = stats(3); @s=stats(4); @k["x"] = stats(5); exit(); }
    const bt017 =
      '{"type": "stats", "data": {"@k": {"x": {"count": 1, "average": 5, "total": 5}}}}\n' +
      '{"type": "stats", "data": {"@s": {"count": 2, "average": 3, "total": 7}}}\n';
    const j = json();
    j.out.exitMaps([
      scalarMap('@s', { kind: 'stats', signed: true }, { kind: 'stats', count: 2n, total: 7n, signed: true }),
      keyedMap('@k', [STR], { kind: 'stats', signed: true }, [
        [[str('x')], { kind: 'stats', count: 1n, total: 5n, signed: true }],
      ]),
    ]);
    assert.equal(j.sink.text, bt017);
    // bpftrace 0.17 -f json: @a = avg(7); @ak[1] = avg(3)
    assert.equal(
      printJson(scalarMap('@a', { kind: 'avg', signed: true }, { kind: 'avg', count: 1n, total: 7n, signed: true })),
      '{"type": "stats", "data": {"@a": 7}}\n',
    );
    assert.equal(
      printJson(
        keyedMap('@ak', [I64], { kind: 'avg', signed: true }, [
          [[i64(1)], { kind: 'avg', count: 1n, total: 3n, signed: true }],
        ]),
      ),
      '{"type": "stats", "data": {"@ak": {"1": 3}}}\n',
    );
  });

  it('print(@, top, div) of an avg map (bpftrace 0.26 tests/runtime/json-output print_avg_map_args)', () => {
    const avg = (n: number) => ({ kind: 'avg' as const, count: 1n, total: BigInt(n), signed: true });
    const m = keyedMap('@', [STR], { kind: 'avg', signed: true }, [
      [[str('a')], avg(10)],
      [[str('b')], avg(20)],
      [[str('c')], avg(30)],
      [[str('d')], avg(40)],
    ]);
    assert.equal(printJson(m, { top: 2, div: 10 }), '{"type": "stats", "data": {"@": {"c": 3, "d": 4}}}\n');
  });

  it('empty maps print nothing, except avg/stats maps which print {} (0.26)', () => {
    assert.equal(printJson(keyedMap('@', [I64], { kind: 'count' }, [])), '');
    assert.equal(printJson(keyedMap('@h', [I64], HIST, [])), '');
    assert.equal(
      printJson(keyedMap('@a', [I64], { kind: 'avg', signed: true }, [])),
      '{"type": "stats", "data": {"@a": {}}}\n',
    );
  });
});

describe('json histograms', () => {
  it('log2 histogram with negative, 0, 1 and ranges (arrays joined with "," in 0.26)', () => {
    // bpftrace 0.17 -f json, same program as the text test: same objects, but 0.17 joins them with ", "
    const got = printJson(scalarMap('@', HIST, histOf([-1, 0, 1, 2, 3, 7, 20, 20, 20])));
    assert.equal(
      got,
      '{"type": "hist", "data": {"@": [{"max": -1, "count": 1},{"min": 0, "max": 0, "count": 1},' +
        '{"min": 1, "max": 1, "count": 1},{"min": 2, "max": 3, "count": 2},{"min": 4, "max": 7, "count": 1},' +
        '{"min": 8, "max": 15, "count": 0},{"min": 16, "max": 31, "count": 3}]}}\n',
    );
  });

  it('single bucket (0.17 and 0.26 agree)', () => {
    // bpftrace 0.17 -f json: BEGIN { @h = hist(5); } → {"type": "hist", "data": {"@h": [{"min": 4, "max": 7, "count": 1}]}}
    assert.equal(
      printJson(scalarMap('@h', HIST, histOf([5]))),
      '{"type": "hist", "data": {"@h": [{"min": 4, "max": 7, "count": 1}]}}\n',
    );
  });

  it('zeroed histogram is an empty array', () => {
    // bpftrace 0.17 -f json: BEGIN { @=hist(5); zero(@); exit(); } → {"type": "hist", "data": {"@": []}}
    const zeroed = { kind: 'hist' as const, bits: 0, buckets: new Map([[4, 0n]]) };
    assert.equal(printJson(scalarMap('@', HIST, zeroed)), '{"type": "hist", "data": {"@": []}}\n');
  });

  it('10G bucket (0.26 tests/runtime/outputs/hist_10g.json)', () => {
    assert.equal(
      printJson(scalarMap('@', HIST, histOf([10n * (1n << 30n)]))),
      '{"type": "hist", "data": {"@": [{"min": 8589934592, "max": 17179869183, "count": 1}]}}\n',
    );
  });

  it('top bucket [4E, 8E): max 2^63-1 does not fit a double and becomes a string', () => {
    assert.equal(
      printJson(scalarMap('@', HIST, histOf([1n << 62n]))),
      '{"type": "hist", "data": {"@": [{"min": 4611686018427387904, "max": "9223372036854775807", "count": 1}]}}\n',
    );
  });

  it('fine-grained hist(n, 3) over 0..1023 (0.26 tests/runtime/outputs/hist_2args.json)', () => {
    const values = Array.from({ length: 1024 }, (_, i) => i);
    const line = printJson(scalarMap('@', { kind: 'hist', bits: 3 }, histOf(values, 3)));
    const rows = JSON.parse(line).data['@'] as { min: number; max: number; count: number }[];
    assert.equal(rows.length, 64);
    for (let i = 0; i < 16; i++) assert.deepEqual(rows[i], { min: i, max: i, count: 1 });
    assert.deepEqual(rows[16], { min: 16, max: 17, count: 2 });
    assert.deepEqual(rows[24], { min: 32, max: 35, count: 4 });
    assert.deepEqual(rows[63], { min: 960, max: 1023, count: 64 });
  });

  it('lhist with under/overflow', () => {
    // bpftrace 0.17 -f json: lhist(2|3|7|-1|11, 0, 10, 2) gives the same objects joined with ", "
    assert.equal(
      printJson(scalarMap('@', { kind: 'lhist', min: 0, max: 10, step: 2 }, lhistOf([2, 3, 7, -1, 11], 0, 10, 2))),
      '{"type": "hist", "data": {"@": [{"max": -1, "count": 1},{"min": 0, "max": 1, "count": 0},' +
        '{"min": 2, "max": 3, "count": 2},{"min": 4, "max": 5, "count": 0},{"min": 6, "max": 7, "count": 1},' +
        '{"min": 8, "max": 9, "count": 0},{"min": 10, "count": 1}]}}\n',
    );
  });

  it('keyed histograms ordered by total (0.26 tests/runtime/outputs/lhist_multiple.json)', () => {
    const L = { kind: 'lhist' as const, min: 0, max: 100, step: 10 };
    const m = keyedMap('@stats', [STR], L, [
      [[str('bpftrace')], lhistOf([2, 1000], 0, 100, 10)],
      [[str('curl')], lhistOf([50], 0, 100, 10)],
    ]);
    const got = printJson(m);
    assert.ok(
      got.startsWith(
        '{"type": "hist", "data": {"@stats": {"curl": [{"min": 50, "max": 59, "count": 1}], "bpftrace": [{"min": 0, "max": 9, "count": 1},',
      ),
    );
    assert.ok(got.endsWith(',{"min": 100, "count": 1}]}}}\n'));
  });

  it('keyed log2 histograms with multi-value keys (0.26 tests/runtime/outputs/hist_multiple_multiple_keys.json)', () => {
    const m = keyedMap('@', [STR, I64], HIST, [
      [[str('curl'), i64(3)], histOf([511, 1024])],
      [[str('bpftrace'), i64(2)], histOf([2])],
    ]);
    assert.equal(
      printJson(m),
      '{"type": "hist", "data": {"@": {"bpftrace,2": [{"min": 2, "max": 3, "count": 1}], "curl,3": [' +
        '{"min": 256, "max": 511, "count": 1},{"min": 512, "max": 1023, "count": 0},{"min": 1024, "max": 2047, "count": 1}]}}}\n',
    );
  });

  it('count maps with key order ties (0.26 print_hist_with_top_arg analogue for counts)', () => {
    const m = keyedMap('@', [I64], { kind: 'count' }, [
      [[i64(2)], count(1)],
      [[i64(1)], count(1)],
    ]);
    assert.equal(printJson(m), '{"type": "map", "data": {"@": {"1": 1, "2": 1}}}\n');
  });
});
