import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { type FlameGraphOptions, renderFlameGraph, renderFlameGraphFiles } from '../../src/flame/flamegraph.js';
import { byteOrder, fixture, frameDiff, readLines, referenceData, svgFrames } from './helpers.js';

const ref = referenceData();
const tmp = mkdtempSync(join(tmpdir(), 'bpfscope-merge-stream-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const p = join(tmp, name);
  writeFileSync(p, text);
  return p;
}

/** The files' document by the streaming path (which must apply) and by the lines path: the same bytes. */
function sameAsLines(files: string[], opts: Partial<FlameGraphOptions> = {}): string {
  const r = renderFlameGraphFiles(files, opts);
  assert.ok(r !== null, 'the streaming path applies');
  const lines = files.flatMap((f) => readLines(f));
  const l = renderFlameGraph(lines, opts);
  assert.equal(r.svg, l.svg);
  assert.deepEqual(r.warnings, l.warnings);
  assert.equal(r.error, l.error);
  return r.svg;
}

describe('flamegraph over sorted ASCII files, merged as they are read (merge-stream.ts)', () => {
  it('the ASCII lines of small.folded, sorted: the same document as the lines path', () => {
    // (Its one non-ASCII line takes the lines path: see "gives up" below.)
    const lines = readLines(fixture('small.folded')).filter((l) => /^[\x00-\x7f]*$/.test(l));
    const svg = sameAsLines([file('small-ascii.folded', `${lines.sort(byteOrder).join('\n')}\n`)]);
    assert.match(svg, /<title>java \(84 samples, 34\.85%\)<\/title>/);
    assert.match(svg, /<title>&lt;&amp;&quot;escape me&quot;&gt; \(18 samples, 7\.47%\)<\/title>/);
  });

  it(
    "FlameGraph's corpus: every frame as in flamegraph.pl's SVGs",
    { skip: !ref && 'shared/testdata/flamegraph not found' },
    () => {
      for (const name of ['perf-iperf-stacks-pidtid-01', 'perf-java-stacks-01', 'perf-vertx-stacks-01']) {
        const input = join(ref!, 'expected', `${name}-collapsed-all.txt`);
        for (const [suffix, opts] of [
          ['all', {}],
          ['all-java-icicle', { colors: 'java', inverted: true, title: 'Icicle', width: 900 }],
        ] as [string, Partial<FlameGraphOptions>][]) {
          const r = renderFlameGraphFiles([input], opts);
          assert.ok(r !== null, `${name}: the streaming path applies`);
          const expected = svgFrames(readFileSync(join(ref!, 'svg', `${name}-${suffix}.svg`), 'utf8'));
          assert.ok(expected.length > 200);
          assert.deepEqual(frameDiff(expected, svgFrames(r.svg)), { missing: [], extra: [] }, `${name}-${suffix}`);
        }
      }
    },
  );

  it('small frames: pruned by the final total (a 1-sample frame among 50001 samples, minwidth 0.1 px)', () => {
    // "b" closes while the running total is 1 (wide); at the end it is 1180 / 50001 = 0.024 px < 0.1 px.
    const f = file('prune.folded', 'a;b 1\nc 50000\n');
    const svg = sameAsLines([f]);
    assert.doesNotMatch(svg, /<title>[ab] /);
    assert.match(svg, /<title>c \(50,000 samples, 100\.00%\)<\/title>/);
  });

  it('two files, a last line without "\\n", trailing ";", empty frames, tabs, decimal and differential counts', () => {
    const a = file('a.folded', 'a;b;;c 3\na;b;d 2.5\na;b;d; 1');
    const b = file('b.folded', 'a;e\t4\nf;g 10 20\nf;h 30 5\n');
    sameAsLines([a, b]);
    sameAsLines([a, b], { minwidth: '1%', total: '1000', factor: 2, countname: 'us' });
    sameAsLines([a, b], { flamechart: true });
    const svg = sameAsLines([b]);
    assert.match(svg, /<title>g \(20 samples, 68\.97%; \+34\.48%\)<\/title>/);
    assert.match(svg, /<title>h \(5 samples, 17\.24%; -86\.21%\)<\/title>/);
  });

  it('flame charts keep the input order (unsorted input is fine)', () => {
    const f = file('chart.folded', 'b;x 2\na;y 1\nb;x 3\n');
    const svg = sameAsLines([f], { flamechart: true });
    assert.equal((svg.match(/<title>b \(/g) ?? []).length, 2);
  });

  it('gives up, writing nothing, where the lines path is needed', () => {
    const cases: [string, string, Partial<FlameGraphOptions>][] = [
      ['unsorted', 'b 1\na 1\n', {}],
      ['a line that is a prefix of the previous one', 'a;b 10\na;b 1\n', {}],
      ['non-ASCII', 'a;\u00e9 1\n', {}],
      ['a line without a count', 'a 1\nb\nc 1\n', {}],
      ['--reverse', 'a;b 1\n', { reverse: true }],
      ['--colors chain', 'a;--;b 1\n', { colors: 'chain' }],
    ];
    for (const [what, text, opts] of cases) {
      const chunks: Buffer[] = [];
      const r = renderFlameGraphFiles([file('x.folded', text)], opts, (c) => chunks.push(c));
      assert.equal(r, null, what);
      assert.equal(chunks.length, 0, what);
    }
    assert.equal(renderFlameGraphFiles([]), null, 'standard input');
    assert.equal(renderFlameGraphFiles(['-']), null, 'standard input');
  });

  it('an empty file: the "no valid input" document, as the lines path', () => {
    const r = renderFlameGraphFiles([file('empty.folded', '')]);
    assert.ok(r !== null);
    assert.equal(r.error, 'no stack counts found in the input');
    assert.match(r.svg, /ERROR: No valid input provided to flamegraph\./);
  });

  it('a missing file is an error naming it', () => {
    assert.throws(() => renderFlameGraphFiles([join(tmp, 'nope.folded')]), /cannot open .*nope\.folded/);
  });
});
