/**
 * `bpfscope heatmap --hist` (src/flame/histjson.ts): bpftrace `-f json` hist records as heat map columns, worked by
 * hand: rows from the smallest to the largest counted bucket with the log2 / linear buckets between, keyed maps
 * summed, empty records as empty columns, records of other types skipped; bad input and options through the CLI
 * (one sentence, exit status 1). The live runs (a program's own output) are in test/tools/heatmap-hist.test.ts.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { HeatMapError } from '../../src/flame/heatmap.js';
import { HistJsonInput } from '../../src/flame/histjson.js';
import { fixture, repoRoot } from './helpers.js';
import { readFileSync } from 'node:fs';

function heat(lines: string[], name?: string, unit = ''): { rows: string[]; columns: number[][] } {
  const input = new HistJsonInput();
  for (const l of lines) input.line(l);
  const m = input.heatMap(name, unit);
  return { rows: m.rows, columns: m.columns.map((c) => Array.from(c)) };
}

const b = (min: number | null, max: number | null, count: number): string =>
  `{${min === null ? '' : `"min": ${min}, `}${max === null ? '' : `"max": ${max}, `}"count": ${count}}`;
const hist = (name: string, ...buckets: string[]) => `{"type": "hist", "data": {"${name}": [${buckets.join(',')}]}}`;

describe('HistJsonInput', () => {
  it('log2 buckets: rows span the counted buckets, the ones no record printed included', () => {
    const m = heat(
      [
        '{"type": "attached_probes", "count": 2, "data": {"probes": 2}}',
        hist('@us', b(4, 7, 3)),
        '',
        hist('@us', b(64, 127, 2), b(128, 255, 0)),
        '{"type": "printf", "data": "hello\\n"}',
        hist('@us'),
        hist('@us', b(8, 15, 0), b(16, 31, 1)),
        '{"type": "map", "data": {"@n": 4}}',
      ],
      undefined,
      'us',
    );
    assert.deepEqual(m, {
      rows: ['4-7 us', '8-15 us', '16-31 us', '32-63 us', '64-127 us'],
      columns: [
        [3, 0, 0, 0, 0],
        [0, 0, 0, 0, 2],
        [0, 0, 0, 0, 0],
        [0, 0, 1, 0, 0],
      ],
    });
  });

  it('log2: underflow, 0 and 1 are rows of their own; bounds past 2^53 are exact', () => {
    const m = heat([
      hist('@h', b(null, -1, 1)),
      hist('@h', b(2, 3, 5)),
      hist('@h', '{"min": 4611686018427387904, "max": 9223372036854775807, "count": 1}'),
    ]);
    assert.deepEqual(m.rows.slice(0, 5), ['<0', '0', '1', '2-3', '4-7']);
    assert.equal(m.rows.length, 3 + 62);
    assert.equal(m.rows[m.rows.length - 1], '4611686018427387904-9223372036854775807');
    assert.deepEqual(
      m.columns.map((c) => c.reduce((x, y) => x + y)),
      [1, 5, 1],
    );
    assert.equal(m.columns[1]![3], 5);
  });

  it('lhist: linear rows of the common width, underflow and overflow at the ends', () => {
    const m = heat([hist('@l', b(null, -1, 2), b(0, 4, 1)), hist('@l', b(15, 19, 4), b(20, null, 1))]);
    assert.deepEqual(m, {
      rows: ['<0', '0-4', '5-9', '10-14', '15-19', '>=20'],
      columns: [
        [2, 1, 0, 0, 0, 0],
        [0, 0, 0, 0, 4, 1],
      ],
    });
  });

  it('keyed maps: the keys are summed into one column a record', () => {
    const keyed = `{"type": "hist", "data": {"@k": {"a": [${b(1, 1, 2)}], "b,c": [${b(1, 1, 3)},${b(2, 3, 1)}]}}}`;
    assert.deepEqual(heat([keyed]), { rows: ['1', '2-3'], columns: [[5, 1]] });
  });

  it('several maps: --map chooses one, else an error names them', () => {
    const lines = [hist('@a', b(1, 1, 1)), hist('@b', b(4, 7, 2)), hist('@a', b(2, 3, 1))];
    assert.deepEqual(heat(lines, '@a'), {
      rows: ['1', '2-3'],
      columns: [
        [1, 0],
        [0, 1],
      ],
    });
    assert.deepEqual(heat(lines, '@b'), { rows: ['4-7'], columns: [[2]] });
    const bad = (l: string[], name: string | undefined, msg: RegExp) =>
      assert.throws(
        () => heat(l, name),
        (e: unknown) => e instanceof HeatMapError && msg.test(e.message),
      );
    bad(lines, undefined, /^the input has several histogram maps \(@a, @b\): choose one with --map$/);
    bad(lines, '@c', /^no histogram map @c in the input \(it has @a, @b\)$/);
    bad([], undefined, /^no histogram in the input/);
    bad(['{"type": "map", "data": {"@n": 1}}'], undefined, /^no histogram in the input/);
    bad([hist('@a'), hist('@a', b(1, 1, 0))], undefined, /^histogram @a counted nothing: no heat map to draw$/);
    bad(['{"type": "hist"', hist('@a', b(1, 1, 1))], undefined, /^line 1 is not bpftrace's -f json output/);
    bad(['12 34'], undefined, /^line 1 is not bpftrace's -f json output \(one JSON object a line\): "12 34"$/);
    bad(
      [hist('@a', '{"min": 1, "max": "x", "count": 1}')],
      undefined,
      /^line 1 is not bpftrace's -f json output \(@a has a bucket that is not/,
    );
    bad([hist('@a', b(0, 4, 1)), hist('@a', b(10, 19, 1))], undefined, /neither log2 \(hist\) nor of one width/);
  });
});

describe('recorded -f json output (the docs picture)', () => {
  it("hist-intervals.jsonl: 20 columns, the read sizes 1 to 1 MiB, each column its record's total", () => {
    // bpfscope -f json -e 'tracepoint:syscalls:sys_enter_read { @bytes = hist(args.count); }
    //   interval:s:1 { print(@bytes); clear(@bytes); @n++; if (@n == 20) { exit(); } } END { clear(@bytes); clear(@n); }'
    const input = new HistJsonInput();
    input.bytes(readFileSync(fixture('hist-intervals.jsonl')));
    input.end();
    const m = input.heatMap(undefined, 'bytes');
    assert.equal(m.rows.length, 20);
    assert.equal(m.rows[0], '1 bytes');
    assert.equal(m.rows[19], '524288-1048575 bytes');
    // Totals per record, summed from the file by hand (python: sum of "count" per line).
    assert.deepEqual(
      m.columns.map((c) => Array.from(c).reduce((a, b) => a + b)),
      [353, 474, 731, 208, 386, 51, 252, 399, 499, 579, 121, 1569, 28, 23, 42, 23, 1029, 47, 41, 28],
    );
  });
});

describe('bpfscope heatmap --hist (CLI)', () => {
  function bpfscope(args: string[], input: string): { code: number | null; stdout: string; stderr: string } {
    const compiled = fileURLToPath(import.meta.url).includes('/dist/');
    const root = repoRoot();
    const argv = compiled
      ? [join(root, 'dist', 'bundle', 'bpfscope.cjs'), 'heatmap', ...args]
      : ['--import', import.meta.resolve('tsx'), join(root, 'src', 'cli', 'main.ts'), 'heatmap', ...args];
    const r = spawnSync(process.execPath, argv, { input, maxBuffer: 1 << 26 });
    return { code: r.status, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
  }
  const two = `${hist('@us', b(4, 7, 3))}\n${hist('@us', b(16, 31, 1), b(32, 63, 1))}\n`;

  it('draws one column a record, rows labelled with --unitslabel, hover text as the tools', () => {
    const r = bpfscope(['--hist', '--unitslabel=us', '--stepsec=2', '--title', 'Sizes'], two);
    assert.equal(r.code, 0, r.stderr);
    const cells = [...r.stdout.matchAll(/onmouseover="s\(([^)]*)\)"/g)].map((m) => m[1]);
    // Columns of 2 s: times are ranges, as trace2heatmap.pl's with --stepsec > 1.
    assert.deepEqual(cells, ["'0-1','4-7 us',3,3,3", "'2-3','16-31 us',1,1,2", "'2-3','32-63 us',1,2,2"]);
    assert.match(r.stdout, />Sizes<\/text>/);
    // --maxcol keeps columns 0..N; --map with or without "@".
    const one = bpfscope(['--hist', '--maxcol=0', '--map', 'us'], two);
    assert.equal(one.code, 0, one.stderr);
    assert.deepEqual(
      [...one.stdout.matchAll(/onmouseover="s\(([^)]*)\)"/g)].map((m) => m[1]),
      ["'0','4-7',3,3,3"],
    );
  });

  it('bad input and options: one sentence, exit status 1', () => {
    const failsWith = (args: string[], input: string, message: string) => {
      const r = bpfscope(args, input);
      assert.deepEqual({ code: r.code, stdout: r.stdout, stderr: r.stderr }, { code: 1, stdout: '', stderr: message });
    };
    failsWith(
      ['--hist'],
      '',
      'ERROR: heatmap: no histogram in the input (expected bpftrace -f json output with {"type": "hist"} lines)\n',
    );
    failsWith(
      ['--hist'],
      '1 2\n',
      'ERROR: heatmap: line 1 is not bpftrace\'s -f json output (one JSON object a line): "1 2"\n',
    );
    failsWith(
      ['--hist', '--rows', '5'],
      two,
      "ERROR: heatmap: --rows does not apply to --hist (the rows are the histogram's buckets)\n",
    );
    failsWith(['--map', '@us'], two, 'ERROR: heatmap: --map needs --hist\n');
    failsWith(['--hist', '--map', '@x'], two, 'ERROR: heatmap: no histogram map @x in the input (it has @us)\n');
    const many = Array.from({ length: 10001 }, () => hist('@us', b(1, 1, 1))).join('\n');
    failsWith(['--hist'], many, 'ERROR: heatmap: Too many columns (>10000)\n');
  });
});
