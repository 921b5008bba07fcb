#!/usr/bin/env node
// Renders the pictures of docs/visualisations.md into docs/pictures/ from the test data the flame graph and heat
// map tests check against (test/flame/fixtures and ../shared/testdata), with the built library (dist/src/flame).
// USAGE: npm run docs:pictures   (builds first; then `node scripts/docs-pictures.mjs`)
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const shared = process.env.BPFSCOPE_SHARED ?? join(root, '..', 'shared');
const lib = join(root, 'dist', 'src', 'flame');
if (!existsSync(join(lib, 'heatmap.js'))) {
  console.error('docs-pictures: dist/src/flame not found: run "npm run build" first');
  process.exit(1);
}
const { renderFlameGraph } = await import(join(lib, 'flamegraph.js'));
const { HeatMapInput, renderHeatMap, renderHistHeatMap } = await import(join(lib, 'heatmap.js'));
const { HistJsonInput } = await import(join(lib, 'histjson.js'));
const { HeatMapWriter } = await import(join(root, 'dist', 'src', 'tools', 'framework', 'heatmap.js'));
const out = join(root, 'docs', 'pictures');
mkdirSync(out, { recursive: true });
const lines = (file) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '');
const fixture = (name) => join(root, 'test', 'flame', 'fixtures', name);

function write(name, svg) {
  writeFileSync(join(out, name), svg);
  console.log(`docs/pictures/${name} (${svg.length} bytes)`);
}

write('flamegraph.svg', renderFlameGraph(lines(fixture('small.folded')), { title: 'Flame Graph' }).svg);
write('icicle.svg', renderFlameGraph(lines(fixture('small.folded')), { inverted: true, colors: 'java' }).svg);
write('differential.svg', renderFlameGraph(lines(fixture('diff.folded')), { title: 'Differential Flame Graph' }).svg);
const offwake = join(shared, 'testdata', 'flamegraph', 'chain', 'offwake.folded');
if (existsSync(offwake)) {
  const opts = { colors: 'chain', title: 'Off-Wake Time Flame Graph', countname: 'us' };
  write('chain.svg', renderFlameGraph(lines(offwake), opts).svg);
} else console.error(`docs-pictures: ${offwake} not found: chain.svg not written`);
const trace = join(shared, 'testdata', 'heatmap', 'input', 'example-trace.txt');
if (existsSync(trace)) {
  const input = new HeatMapInput();
  input.bytes(readFileSync(trace));
  input.end();
  const opts = { unitsTime: 'us', unitsLabel: 'us', maxLat: 15000, rows: 30, grid: true, title: 'Block I/O latency' };
  write('heatmap.svg', renderHeatMap(input, opts).svg);
} else console.error(`docs-pictures: ${trace} not found: heatmap.svg not written`);

// `bpfscope heatmap --hist`: a program's -f json output, recorded (read sizes, interval:s:1, 20 s).
const reads = new HistJsonInput();
reads.bytes(readFileSync(fixture('hist-intervals.jsonl')));
reads.end();
write(
  'heatmap-hist.svg',
  renderHistHeatMap(reads.heatMap(undefined, 'bytes'), {
    title: 'read() sizes (heatmap --hist)',
    boxSize: 14,
    grid: true,
  }).svg,
);

// A tool's --heatmap: runqlat --json 1 20, recorded on the busy 2-CPU test machine (sub-16 us waits and a band of
// 8-32 ms ones), replayed through the tools' heat map writer (what runqlat --heatmap does with the same intervals).
const runqlat = join(out, 'runqlat-heatmap.svg');
const writer = new HeatMapWriter(runqlat, { kind: 'hist', title: 'Run Queue Latency (runqlat --heatmap)' });
writer.setInterval(1);
for (const line of lines(fixture('runqlat-intervals.jsonl'))) {
  const i = JSON.parse(line);
  for (const h of i.histograms) {
    h.buckets = h.buckets.map((b) => ({ low: BigInt(b.low), high: BigInt(b.high), count: BigInt(b.count) }));
  }
  writer.add(i);
}
const note = writer.finish();
if (note) console.error(note.trimEnd());
console.log(`docs/pictures/runqlat-heatmap.svg (${readFileSync(runqlat).length} bytes)`);
