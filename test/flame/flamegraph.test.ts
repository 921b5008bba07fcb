import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { frameColor, PALETTES } from '../../src/flame/color.js';
import { type FlameGraphOptions, parseNameAttr, renderFlameGraph } from '../../src/flame/flamegraph.js';
import { fixture, frameDiff, readLines, referenceData, svgFrames } from './helpers.js';

const ref = referenceData();

/** Renders and compares the frame set with an expected .frames fixture (made by flamegraph.pl, see regen.sh). */
function assertFrames(input: string, expectedFile: string, opts: Partial<FlameGraphOptions> = {}): string {
  const { svg } = renderFlameGraph(readLines(fixture(input)), opts);
  const expected = readLines(fixture('expected', expectedFile));
  const got = svgFrames(svg);
  const d = frameDiff(expected, got);
  assert.deepEqual(d, { missing: [], extra: [] }, `${expectedFile}: frames differ`);
  assert.equal(got.length, expected.length);
  return svg;
}

describe(
  'flamegraph frames against flamegraph.pl reference SVGs',
  {
    skip: !ref && 'shared/testdata/flamegraph not found',
  },
  () => {
    for (const name of ['perf-iperf-stacks-pidtid-01', 'perf-java-stacks-01', 'perf-vertx-stacks-01']) {
      const cases: [string, Partial<FlameGraphOptions>][] = [
        ['all', {}],
        ['all-java-icicle', { colors: 'java', inverted: true, title: 'Icicle', width: 900 }],
      ];
      for (const [suffix, opts] of cases) {
        it(`svg/${name}-${suffix}.svg: every frame (name, samples, x, y, width, height, colour, label)`, () => {
          const lines = readLines(join(ref!, 'expected', `${name}-collapsed-all.txt`));
          const { svg } = renderFlameGraph(lines, opts);
          const expected = svgFrames(readFileSync(join(ref!, 'svg', `${name}-${suffix}.svg`), 'utf8'));
          assert.ok(expected.length > 200);
          assert.deepEqual(frameDiff(expected, svgFrames(svg)), { missing: [], extra: [] });
        });
      }
    }
  },
);

/** The flat palette an "rgb(r,g,b)" fill belongs to: blue, aqua, or grey ("--" separator frames). */
function paletteOf(fill: string): string {
  const [r, g, b] = fill.match(/\d+/g)!.map(Number) as [number, number, number];
  if (r === 160 && g === 160 && b === 160) return 'grey';
  if (r === g && r >= 80 && r <= 139 && b >= 205 && b <= 254) return 'blue';
  if (g === b && r >= 50 && r <= 109 && g >= 165 && g <= 219) return 'aqua';
  return `other ${fill}`;
}

describe(
  'flamegraph --colors chain against flamegraph.pl',
  { skip: !ref && 'shared/testdata/flamegraph not found' },
  () => {
    it('chain/offwake-chain.svg: same frames, waker frames aqua, the others blue, "--" grey', () => {
      const opts = { colors: 'chain', title: 'Off-Wake Time Flame Graph', countname: 'us' };
      const { svg } = renderFlameGraph(readLines(join(ref!, 'chain', 'offwake.folded')), opts);
      const expectedSvg = readFileSync(join(ref!, 'chain', 'offwake-chain.svg'), 'utf8');
      // flamegraph.pl picks each shade at random inside the palette: compare the palette, everything else exactly.
      const withPalette = (frames: string[]) =>
        frames.map((f) => {
          const p = f.split('|');
          p[5] = paletteOf(p[5]!);
          return p.join('|');
        });
      const expected = withPalette(svgFrames(expectedSvg));
      const got = withPalette(svgFrames(svg));
      assert.ok(expected.length > 60);
      assert.deepEqual(frameDiff(expected, got), { missing: [], extra: [] });
      const palettes = new Set(expected.map((f) => f.split('|')[5]));
      assert.deepEqual([...palettes].sort(), ['aqua', 'blue', 'grey'], 'the reference has the three kinds');
      // A waker frame (after "--") and an off-CPU frame, by name.
      assert.ok(got.some((f) => f.startsWith('pipe_write (635,117 us, 17.39%)|') && f.includes('|aqua|')));
      assert.ok(got.some((f) => f.startsWith('read (2,169,581 us, 59.40%)|') && f.includes('|blue|')));
      assert.match(svg, />Off-Wake Time Flame Graph</);
    });
  },
);

describe('flamegraph options against flamegraph.pl (fixtures)', () => {
  it('default', () => {
    assertFrames('small.folded', 'default.frames');
  });
  for (const p of PALETTES) {
    it(`--colors ${p}`, () => {
      assertFrames('small.folded', `colors-${p}.frames`, { colors: p });
    });
  }
  it('--colors chain with waker stacks', () => {
    assertFrames('chain.folded', 'chain-input.frames', { colors: 'chain' });
  });
  it('--hash', () => {
    assertFrames('small.folded', 'hash.frames', { hash: true });
  });
  it('--reverse', () => {
    assertFrames('small.folded', 'reverse.frames', { reverse: true });
  });
  it('--inverted', () => {
    assertFrames('small.folded', 'inverted.frames', { inverted: true });
  });
  it('--flamechart', () => {
    assertFrames('small.folded', 'flamechart.frames', { flamechart: true });
  });
  it('--minwidth 2%', () => {
    const svg = assertFrames('small.folded', 'minwidth-pct.frames', { minwidth: '2%' });
    assert.ok(!svg.includes('empty_frame_before'), '1 of 247 samples is under 2%');
  });
  it('--minwidth 50 (pixels)', () => {
    assertFrames('small.folded', 'minwidth-px.frames', { minwidth: '50' });
  });
  it('layout options: title, subtitle, width, height, font size and width, count and name types, factor, total', () => {
    assertFrames('small.folded', 'layout.frames', {
      title: 'T',
      subtitle: 'S',
      width: 800,
      height: 20,
      fontsize: 10,
      fontwidth: 0.7,
      countname: 'bytes',
      nametype: 'Func:',
      factor: 2.5,
      total: '500',
    });
  });
  it('differential input: red for growth, blue for reduction, delta percentages', () => {
    const svg = assertFrames('diff.folded', 'diff.frames');
    assert.match(svg, /<title>paint \(150 samples, 25\.21%; \+16\.81%\)<\/title><rect [^>]*fill="rgb\(255,0,0\)"/);
    assert.match(svg, /<title>tokenize \(80 samples, 13\.45%; -6\.72%\)<\/title><rect [^>]*fill="rgb\(126,126,255\)"/);
  });
  it('differential --negate swaps the hues', () => {
    const svg = assertFrames('diff.folded', 'diff-negate.frames', { negate: true });
    assert.match(svg, /<title>paint \(150 samples, 25\.21%; -16\.81%\)<\/title><rect [^>]*fill="rgb\(0,0,255\)"/);
    assert.match(svg, /<title>tokenize \(80 samples, 13\.45%; \+6\.72%\)<\/title><rect [^>]*fill="rgb\(255,126,126\)"/);
  });
  it('differential --reverse', () => {
    assertFrames('diff.folded', 'diff-reverse.frames', { reverse: true });
  });
});

describe('flamegraph document', () => {
  const lines = readLines(fixture('small.folded'));
  it('is the same bytes for the same input and options', () => {
    assert.equal(renderFlameGraph(lines).svg, renderFlameGraph(lines.slice().reverse()).svg);
  });
  it('has the title, background and controls the script needs', () => {
    const { svg } = renderFlameGraph(lines, { title: 'a <b> & c', subtitle: 'sub', bgcolors: 'blue' });
    assert.match(svg, /<text id="title" x="600.00" y="24">a &lt;b&gt; &amp; c<\/text>/);
    assert.match(svg, /<text id="subtitle" x="600.00" y="48">sub<\/text>/);
    assert.match(svg, /<stop stop-color="#eeeeee" offset="5%" \/>\n\t\t<stop stop-color="#e0e0ff" offset="95%" \/>/);
    for (const id of ['details', 'unzoom', 'search', 'ignorecase', 'matched', 'frames'])
      assert.ok(svg.includes(`id="${id}"`), id);
    assert.ok(svg.includes('onload="init(evt)"'));
    assert.ok(svg.indexOf(']]>') === svg.lastIndexOf(']]>'), 'one CDATA end');
  });
  it('picks background and default titles as flamegraph.pl does', () => {
    assert.match(renderFlameGraph(lines, { colors: 'mem' }).svg, /stop-color="#e0ffe0"/);
    assert.match(renderFlameGraph(lines, { colors: 'io' }).svg, /stop-color="#e0e0ff"/);
    assert.match(renderFlameGraph(lines, { colors: 'red' }).svg, /stop-color="#e8e8e8"/);
    assert.match(renderFlameGraph(lines, { bgcolors: '#123456' }).svg, /stop-color="#123456" offset="95%"/);
    assert.match(renderFlameGraph(lines, { inverted: true }).svg, />Icicle Graph</);
    assert.match(renderFlameGraph(lines, { flamechart: true }).svg, />Flame Chart</);
  });
  it('rejects bad options with flamegraph.pl messages', () => {
    assert.throws(() => renderFlameGraph(lines, { minwidth: 'abc' }), /Value 'abc' is invalid for minwidth/);
    assert.throws(() => renderFlameGraph(lines, { bgcolors: 'pink' }), /Unrecognized bgcolor option "pink"/);
    assert.throws(() => renderFlameGraph(lines, { notes: 'a<b' }), /Notes string can't contain < or >/);
  });
  it('embeds notes and the encoding', () => {
    const { svg } = renderFlameGraph(lines, { notes: 'run 42', encoding: 'utf-8' });
    assert.ok(svg.startsWith('<?xml version="1.0" encoding="utf-8" standalone="no"?>'));
    assert.ok(svg.includes('<!-- NOTES: run 42 -->'));
  });
  it('gives an error document and warnings for input without counts', () => {
    const r = renderFlameGraph(['no count here', '']);
    assert.equal(r.error, 'no stack counts found in the input');
    assert.ok(r.svg.includes('ERROR: No valid input'));
    assert.deepEqual(r.warnings, [
      'Stack count is low (0). Did something go wrong?',
      'Ignored 2 lines with invalid format',
    ]);
  });
  it('ignores --total below the real total, with a warning', () => {
    const r = renderFlameGraph(lines, { total: '100' });
    assert.deepEqual(r.warnings, ['Specified --total 100 is less than actual total 247, so ignored']);
    assert.equal(svgFrames(r.svg).join('\n'), svgFrames(renderFlameGraph(lines).svg).join('\n'));
  });
  it('--random colours stay inside the palette', () => {
    const { svg } = renderFlameGraph(lines, { random: true, colors: 'red' });
    for (const m of svg.matchAll(/fill="rgb\((\d+),(\d+),(\d+)\)" rx/g)) {
      const [r, g, b] = [Number(m[1]), Number(m[2]), Number(m[3])];
      if (r === 160 || r === 200) continue; // "-" and "--" frames are grey
      assert.ok(r >= 200 && r <= 254 && g >= 50 && g <= 129 && g === b, m[0]);
    }
  });
  it('--cp takes colours from the palette map and adds new ones', () => {
    const paletteMap = new Map([['main', 'rgb(1,2,3)']]);
    const { svg } = renderFlameGraph(lines, { paletteMap });
    const mains = [...svg.matchAll(/<title>main \([^<]*<\/title><rect [^>]*fill="([^"]+)"/g)].map((m) => m[1]);
    assert.deepEqual(mains, ['rgb(1,2,3)', 'rgb(1,2,3)', 'rgb(1,2,3)', 'rgb(1,2,3)']);
    assert.equal(paletteMap.get('swapper'), frameColor('hot', 'swapper'));
    assert.ok(paletteMap.has('native_safe_halt') && paletteMap.has('sys_write_[k]'));
  });
  it('--nameattr sets attributes and links', () => {
    const nameattr = parseNameAttr('main\ttitle=the main\thref=http://x/main\tclass=m\n', 'attrs');
    const { svg } = renderFlameGraph(lines, { nameattr });
    assert.match(svg, /<a xlink:href="http:\/\/x\/main" target="_top" class="m">\n<title>the main<\/title>/);
    assert.throws(() => parseNameAttr('no tab\n', 'attrs'), /Invalid format in attrs/);
  });
});
