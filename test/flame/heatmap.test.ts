/**
 * `bpfscope heatmap` against trace2heatmap.pl: the reference SVGs of shared/testdata/heatmap (made by the Perl script,
 * see its README) as cell sets (x, y, width, height, fill, hover arguments) and header/labels (the <svg> element,
 * every <text> and <line>); hand-worked small maps for the edge behaviour; bad input through the CLI.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  HeatMapCounter,
  HeatMapError,
  HeatMapInput,
  type HeatMapOptions,
  renderHeatMap,
} from '../../src/flame/heatmap.js';
import { plainScanModule } from '../../src/flame/heatmap-scan.js';
import { plainCellsModule } from '../../src/flame/heatmap-cells.js';
import { PLAIN_CELLS_WASM, PLAIN_SCAN_WASM } from '../../src/flame/heatmap-wasm.js';
import { repoRoot } from './helpers.js';

const ref = process.env.BPFSCOPE_HEATMAP_TESTDATA ?? join(repoRoot(), '..', 'shared', 'testdata', 'heatmap');
const haveRef = existsSync(join(ref, 'expected'));

/** Cells: "x|y|width|height|fill|hover arguments", sorted. */
export function svgCells(svg: string): string[] {
  const re =
    /<rect x="([^"]+)" y="([^"]+)" width="([^"]+)" height="([^"]+)" fill="([^"]+)" onmouseover="s\(([^)]*)\)" onmouseout="c\(\)" \/>/g;
  return [...svg.matchAll(re)].map((m) => m.slice(1, 7).join('|')).sort();
}

/** Everything but the cells, script and comments: the <svg> element, background, texts and lines, in order. */
function svgFrame(svg: string): string[] {
  return svg.split('\n').filter((l) => /^<(svg|text|line) /.test(l) || /^<rect [^>]*id="bkg"/.test(l));
}

function render(lines: string[], opts: Partial<HeatMapOptions>): string {
  const input = new HeatMapInput();
  for (const l of lines) input.line(l);
  return renderHeatMap(input, opts).svg;
}

const CASES: [string, string, Partial<HeatMapOptions>][] = [
  ['example-default', 'example-trace.txt', { unitsTime: 'us', unitsLabel: 'us' }],
  [
    'example-maxlat15000-rows30-grid',
    'example-trace.txt',
    { unitsTime: 'us', unitsLabel: 'us', maxLat: 15000, rows: 30, grid: true },
  ],
  [
    'example-minlat-steplat-stepsec-accstats',
    'example-trace.txt',
    { unitsTime: 'us', unitsLabel: 'us', minLat: 2000, maxLat: 10000, stepLat: 200, stepSec: 0.5, accStats: true },
  ],
  [
    'example-boxsize-font-title-maxcol',
    'example-trace.txt',
    {
      unitsTime: 'us',
      unitsLabel: 'us',
      boxSize: 5,
      fontSize: 10,
      fontType: 'Arial',
      title: 'Disk I/O latency',
      maxCol: 40,
    },
  ],
  ['synth-ns-default', 'synth-ns.txt', { unitsTime: 'ns', unitsLabel: 'ns' }],
  [
    'synth-ns-maxlat-rows60-stepsec2',
    'synth-ns.txt',
    { unitsTime: 'ns', unitsLabel: 'us', maxLat: 3000000, rows: 60, stepSec: 2 },
  ],
];

describe('heatmap against trace2heatmap.pl reference SVGs', { skip: !haveRef && `${ref} not found` }, () => {
  for (const [name, input, opts] of CASES) {
    it(`${name}.svg: every cell and the header/labels`, () => {
      const lines = readFileSync(join(ref, 'input', input), 'utf8').split('\n');
      const svg = render(lines, opts);
      const expected = readFileSync(join(ref, 'expected', `${name}.svg`), 'utf8');
      const want = svgCells(expected);
      assert.ok(want.length > 100, 'the reference has cells');
      assert.deepEqual(svgCells(svg), want);
      assert.equal((svg.match(/<rect /g) ?? []).length, want.length + 1, 'no cells the parser missed, + background');
      assert.deepEqual(svgFrame(svg), svgFrame(expected));
    });
  }
  it('raw bytes in pieces of any size give the same map as whole lines (CRLF, tabs, extra fields, odd lines)', () => {
    const text = readFileSync(join(ref, 'input', 'example-trace.txt'), 'utf8')
      .split('\n')
      .slice(0, 3000)
      .map((l, i) => (i % 7 === 3 ? `${l}\r` : i % 11 === 5 ? `\t${l.replace(' ', '\t')}  extra field` : l))
      .concat(['9339900000.5 300', '', '9339900001 1e3', '9339900002 0042'])
      .join('\n');
    const opts = { unitsTime: 'us', unitsLabel: 'us', grid: true };
    const want = render(text.split('\n'), opts);
    assert.ok(svgCells(want).length > 50);
    const bytes = Buffer.from(text);
    for (const size of [1, 7, 4096, bytes.length]) {
      const input = new HeatMapInput();
      for (let p = 0; p < bytes.length; p += size) input.bytes(bytes.subarray(p, p + size));
      input.end();
      assert.equal(renderHeatMap(input, opts).svg, want, `pieces of ${size}`);
    }
  });
  it('two passes (totals, then counting by HeatMapCounter) give the map of the stored events', () => {
    // As the CLI reads a regular file: nothing stored, the general path's lines (CRLF, tabs, a fraction, 1e3)
    // and the plain lines are both counted; with sinks (every event through HeatMapCounter.add) and as the CLI
    // does ('totals', then the counter itself: plain lines counted in WebAssembly).
    const text = readFileSync(join(ref, 'input', 'example-trace.txt'), 'utf8')
      .split('\n')
      .slice(0, 3000)
      .map((l, i) => (i % 7 === 3 ? `${l}\r` : i % 11 === 5 ? `\t${l.replace(' ', '\t')}  extra field` : l))
      .concat(['9339900000.5 300', '', '9339900001 1e3', '9339900002 0042'])
      .join('\n');
    const bytes = Buffer.from(text);
    for (const opts of [
      { unitsTime: 'us', unitsLabel: 'us', grid: true },
      { unitsTime: 'us', maxCol: 3, rows: 7 },
    ]) {
      const want = render(text.split('\n'), opts);
      for (const size of [13, bytes.length]) {
        const feed = (input: HeatMapInput) => {
          for (let p = 0; p < bytes.length; p += size) input.bytes(bytes.subarray(p, p + size));
          input.end();
        };
        for (const sinks of [true, false]) {
          const totals = new HeatMapInput(sinks ? () => {} : 'totals');
          feed(totals);
          assert.deepEqual(totals.blockList(), [], 'nothing stored');
          const counter = new HeatMapCounter(totals, opts);
          const input = new HeatMapInput(sinks ? (pairs, from, to) => counter.add(pairs, from, to) : counter);
          feed(input);
          assert.deepEqual(input.blockList(), [], 'nothing stored');
          assert.equal(counter.added, totals.count);
          assert.equal(counter.render().svg, want, `pieces of ${size}, ${JSON.stringify(opts)}, sinks ${sinks}`);
        }
      }
    }
  });
});

describe('heatmap input parser on many lines', () => {
  it('runs the module its instructions build (heatmap-wasm.ts is up to date: scripts/heatmap-wasm.mjs)', () => {
    assert.deepEqual(Buffer.from(PLAIN_SCAN_WASM, 'base64'), Buffer.from(plainScanModule()));
    assert.deepEqual(Buffer.from(PLAIN_CELLS_WASM, 'base64'), Buffer.from(plainCellsModule()));
  });

  it('keeps every event across storage blocks and odd lines in the middle (1 MiB pieces, one piece)', () => {
    // 150,000 events: time 2000000000 + i (us), latency i % 97 + 1; line 40,000 (after the header) is written as a
    // decimal fraction and line 100,000 with a CRLF, so the byte parser hands them to the general path mid-stream.
    const lines = ['TIME(us) LAT(us)'];
    for (let i = 0; i < 150_000; i++) {
      const t = 2_000_000_000 + i;
      lines.push(
        i === 40_000 ? `${t}.0 ${(i % 97) + 1}.0` : i === 100_000 ? `${t} ${(i % 97) + 1}\r` : `${t} ${(i % 97) + 1}`,
      );
    }
    const bytes = Buffer.from(`${lines.join('\n')}\n`);
    // 1 MiB pieces (as files are read), then the whole ~2.1 MB at once: more than the ~1.06 MiB of input the
    // WebAssembly parser's memory holds at first (heatmap-scan.ts), so it grows.
    assert.ok(bytes.length > 1.5 * (1 << 20));
    for (const size of [1 << 20, bytes.length]) {
      const input = new HeatMapInput();
      for (let p = 0; p < bytes.length; p += size) input.bytes(bytes.subarray(p, p + size));
      input.end();
      assert.equal(input.count, 150_000);
      assert.equal(input.lines, 150_001);
      assert.equal(input.maxRel, 149_999);
      assert.equal(input.largestLatency, 97);
      const times = input.times();
      const lats = input.latencies();
      let bad = -1;
      for (let i = 0; i < 150_000 && bad < 0; i++) if (times[i] !== i || lats[i] !== (i % 97) + 1) bad = i;
      assert.equal(bad, -1, `pieces of ${size}, event ${bad}: ${times[bad]} ${lats[bad]}`);
    }
  });
});

describe('heatmap layout rules (worked by hand)', () => {
  // rows 4 over latencies up to 100: step 25; columns from the first time (100 s).
  const lines = ['TIME LAT', '100 10', '100.2 30', '101 40', '101.5 60', '102 80', '103 100'];
  it('the last column and the top row are counted but not drawn; colour by the largest count', () => {
    const svg = render(lines, { rows: 4 });
    // Height: 4 rows * 8 + 36 + 54 = 122; width: minimum 500. Cell y = 122 - (54 + row * 8).
    assert.match(svg, /<svg version="1.1" width="500" height="122" /);
    assert.deepEqual(svgCells(svg), [
      "10.0|60|8.0|8.0|rgb(255,0,0)|'0','25-50',1,2,2",
      "10.0|68|8.0|8.0|rgb(255,0,0)|'0','0-25',1,1,2",
      "18.0|52|8.0|8.0|rgb(255,0,0)|'1','50-75',1,2,2",
      "18.0|60|8.0|8.0|rgb(255,0,0)|'1','25-50',1,1,2",
      "26.0|44|8.0|8.0|rgb(255,0,0)|'2','75-100',1,1,1",
    ]);
  });
  it('colour ratio, --stepsec > 1 time ranges, --minlat/--maxlat bounds, --unitslabel', () => {
    const ev = ['0 5', '0 5', '0 5', '0 5', '1 5', '2 15', '2 15', '3 5', '4 25', '4 1', '9 5'];
    const svg = render(ev, { rows: 2, minLat: 2, maxLat: 22, stepSec: 2, unitsLabel: 'ms' });
    // step = int(20 / 2) = 10; rows: 5 -> 0, 15 -> 1, 25 and 1 excluded; columns of 2 s: 0,0,0,0,0,1,1,1,-,-,4.
    // Height 2 * 8 + 36 + 54 = 106: row 0 at y 52, row 1 at 44. Column 0 has 5 in row 0: largest count 5. Count 2 of 5: 240 - 96 = 144, 220 - 88 = 132.
    assert.deepEqual(svgCells(svg), [
      "10.0|52|8.0|8.0|rgb(255,0,0)|'0-1','2-12ms',5,5,5",
      "18.0|44|8.0|8.0|rgb(255,144,132)|'2-3','12-22ms',2,3,3",
      "18.0|52|8.0|8.0|rgb(255,192,176)|'2-3','2-12ms',1,1,3",
    ]);
  });
  it('nanosecond epoch times past 2^53 are subtracted exactly', () => {
    const ev = [
      '1732700000123456789 100',
      '1732700001123456789 100',
      '1732700002123456788 150',
      '1732700003000000000 200',
    ];
    const svg = render(ev, { unitsTime: 'ns', rows: 2 });
    // Offsets 0, 1 s, 1.999999999 s (column 1; in doubles it would be 2 s, column 2), 2.876543211 s (column 2, the
    // undrawn last one). Step 100: latencies 100 and 150 in row 1 (y = 106 - (54 + 8) = 44), 200 in the undrawn row 2.
    assert.deepEqual(svgCells(svg), [
      "10.0|44|8.0|8.0|rgb(255,120,110)|'0','100-200',1,1,1",
      "18.0|44|8.0|8.0|rgb(255,0,0)|'1','100-200',2,2,2",
    ]);
  });
  it('errors name the problem', () => {
    const bad = (l: string[], opts: Partial<HeatMapOptions>, msg: RegExp) =>
      assert.throws(
        () => render(l, opts),
        (e: unknown) => e instanceof HeatMapError && msg.test(e.message),
      );
    bad([], {}, /^no events in the input/);
    bad(['T L'], {}, /^no events in the input/);
    bad(['1 2', 'x 3'], {}, /^line 2 is not "TIME LATENCY" \(two numbers\): "x 3"$/);
    bad(['1 2', '2 0x10'], {}, /^line 2 is not/);
    bad(['1 200', '10002 3'], {}, /^Too many columns \(>10000\); try setting --unitstime \?$/);
    bad(['1 2', '2 3'], {}, /^Row resolution too high$/);
    bad(['1 200', '2 3'], { stepLat: 0 }, /^--steplat must be a positive number$/);
    bad(['1 200', '2 3'], { unitsTime: 'xs' }, /^Can't parse time units "xs"\. Try "ms" etc\.$/);
    bad(['10 200', '5 3'], {}, /^an event is 5 s before the first line's time: the input must be in time order$/);
    // Counting takes the events in slices (64 at first, then 4096): one out of order deep in the input, in a later
    // slice of a later block (the 70,001st event), still stops it.
    const late = ['100 200'];
    for (let i = 1; i < 70000; i++) late.push(`${100 + (i >> 10)} 5`);
    late.push('93 5');
    bad(late, {}, /^an event is 7 s before the first line's time: the input must be in time order$/);
    bad(['1 200', '2 3'], { stepLat: 1, maxLat: 20000 }, /^Too many rows \(>10000\)/);
  });
});

describe('bpfscope heatmap (CLI)', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'bpfscope-heatmap-'));
  after(() => rmSync(tmp, { recursive: true, force: true }));
  function bpfscope(args: string[], input?: string): { code: number | null; stdout: string; stderr: string } {
    const compiled = fileURLToPath(import.meta.url).includes('/dist/');
    const root = repoRoot();
    const argv = compiled
      ? [join(root, 'dist', 'bundle', 'bpfscope.cjs'), 'heatmap', ...args]
      : ['--import', import.meta.resolve('tsx'), join(root, 'src', 'cli', 'main.ts'), 'heatmap', ...args];
    const r = spawnSync(process.execPath, argv, { input: input ?? '', maxBuffer: 1 << 26 });
    return { code: r.status, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
  }
  const failsWith = (args: string[], input: string, message: string) => {
    const r = bpfscope(args, input);
    assert.deepEqual({ code: r.code, stdout: r.stdout, stderr: r.stderr }, { code: 1, stdout: '', stderr: message });
  };
  it('reads stdin, options as trace2heatmap.pl spells them', () => {
    const r = bpfscope(['--rows=4', '--title', 'T & U'], '100 10\n100.2 30\n101 40\n101.5 60\n102 80\n103 100\n');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(svgCells(r.stdout).length, 5);
    assert.match(r.stdout, />T &amp; U<\/text>/);
  });
  it('bad input: one sentence, exit status 1', () => {
    const empty = join(tmp, 'empty');
    writeFileSync(empty, '');
    failsWith([empty], '', 'ERROR: heatmap: no events in the input (expected "TIME LATENCY" lines)\n');
    failsWith([], 'T L\n1 2\nfoo bar\n', 'ERROR: heatmap: line 3 is not "TIME LATENCY" (two numbers): "foo bar"\n');
    failsWith([], '1 2\n20000 3\n', 'ERROR: heatmap: Too many columns (>10000); try setting --unitstime ?\n');
    failsWith(['--steplat', '0'], '1 2\n', 'ERROR: heatmap: --steplat must be a positive number\n');
    failsWith(['--rows', 'x'], '1 2\n', 'ERROR: heatmap: value "x" invalid for option --rows (number expected)\n');
    failsWith([join(tmp, 'missing')], '', `ERROR: cannot open ${join(tmp, 'missing')}: no such file or directory\n`);
    // A named regular file is read twice (nothing stored): its errors are the same as a stream's.
    const late = join(tmp, 'late');
    writeFileSync(late, 'T L\n100 500\n101 600\n93 500\n');
    failsWith(
      [late],
      '',
      "ERROR: heatmap: an event is 7 s before the first line's time: the input must be in time order\n",
    );
    const word = join(tmp, 'word');
    writeFileSync(word, '1 2\n3 4\nfoo bar\n');
    failsWith([word], '', 'ERROR: heatmap: line 3 is not "TIME LATENCY" (two numbers): "foo bar"\n');
  });
  it('named files (read twice, nothing stored) give the same bytes as the same text on stdin (events stored)', () => {
    const a = join(tmp, 'a.txt');
    const b = join(tmp, 'b.txt');
    // The second file's first line is not a header (only the first line of all is); no final newline in a.txt.
    writeFileSync(a, 'TIME(s) LAT(ms)\n100 10\n100.2 30\n101 40\t7\n101.5 60\r\n102 80');
    writeFileSync(b, '103 100\n103.5 1e2\n104 20\n');
    const files = bpfscope(['--rows=4', a, b]);
    const stdin = bpfscope(['--rows=4'], `${readFileSync(a, 'utf8')}\n${readFileSync(b, 'utf8')}`);
    assert.equal(files.code, 0, files.stderr);
    assert.equal(stdin.code, 0, stdin.stderr);
    assert.equal(files.stdout, stdin.stdout);
    // Columns 0-3 (104 is the largest, not drawn), rows of 25 ms: 100 -> (0,0) (0,1); 101 -> (1,1) (1,2);
    // 102 -> (2,3); 103 -> (3,4) x2, the top row, not drawn. x = 10 + 8 col; the image is 4 x 8 + 36 + 54 = 122
    // high, so y = 122 - (54 + 8 row) = 68 - 8 row.
    assert.deepEqual(
      svgCells(files.stdout).map((c) => c.split('|').slice(0, 2).join(',')),
      ['10.0,60', '10.0,68', '18.0,52', '18.0,60', '26.0,44'],
    );
  });
  it('the reference traces as named files and on stdin give the reference cells', { skip: !haveRef }, () => {
    const cases: [string, string, string[]][] = [
      ['example-default', 'example-trace.txt', ['--unitstime=us', '--unitslabel=us']],
      [
        'synth-ns-maxlat-rows60-stepsec2',
        'synth-ns.txt',
        ['--unitstime=ns', '--unitslabel=us', '--maxlat=3000000', '--rows=60', '--stepsec=2'],
      ],
    ];
    for (const [name, input, args] of cases) {
      const file = join(ref, 'input', input);
      const want = svgCells(readFileSync(join(ref, 'expected', `${name}.svg`), 'utf8'));
      const fromFile = bpfscope([...args, file]);
      const fromStdin = bpfscope(args, readFileSync(file, 'utf8'));
      assert.equal(fromFile.code, 0, fromFile.stderr);
      assert.deepEqual(svgCells(fromFile.stdout), want, name);
      assert.equal(fromFile.stdout, fromStdin.stdout, name);
    }
  });
});
