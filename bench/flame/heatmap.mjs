#!/usr/bin/env node
// Benchmarks `bpfscope heatmap` against HeatMap's trace2heatmap.pl, side by side in one run: the two tools alternate
// (ours, Perl, ours, Perl, ...) on the same generated trace, each run timed with /usr/bin/time (wall, user+sys CPU,
// peak RSS). Prints a Markdown table of medians and the ratios (Perl time / our time; our RSS / Perl RSS), and
// whether the two SVGs have the same cells (every <rect ... onmouseover> line, byte for byte).
//
// USAGE: npm run build && HEATMAP_DIR=/path/to/HeatMap node bench/flame/heatmap.mjs [--lines N] [--rounds N]
//   --lines N   events in the trace (default 1000000)
//   --rounds N  runs of each tool (default 5)
//   --work DIR  where the trace and outputs go (default $TMPDIR/bpfscope-bench-heatmap)
//   --no-extra-ca-certs  run both tools without NODE_EXTRA_CA_CERTS (default: the environment as it is; see
//               node-env.mjs). Either way the output gives `node -e 0`'s time with and without it.
// The trace is biosnoop-like and deterministic (seeded): a header "TIME(us) LAT(us)", then completion times in
// microseconds over ~20 minutes (increasing, bursty) and latencies with a fast mode (~200 us), a slow mode (~4 ms)
// and rare outliers up to 80 ms. Both tools get `--unitstime=us --unitslabel=us`.
// Without HEATMAP_DIR only ours runs and the comparison is skipped.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchEnv, caCertsNote } from './node-env.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const lines = Number(opt('lines', '1000000'));
const rounds = Number(opt('rounds', '5'));
const work = opt('work', join(tmpdir(), 'bpfscope-bench-heatmap'));
const heatmapDir = process.env.HEATMAP_DIR;
const cli = join(root, 'dist', 'bundle', 'bpfscope.cjs');
const TIME = '/usr/bin/time';
const OPTS = ['--unitstime=us', '--unitslabel=us'];

function fail(msg) {
  console.error(`heatmap bench: ${msg}`);
  process.exit(1);
}
if (!existsSync(cli)) fail(`${cli} not found: run "npm run build" first`);
if (!existsSync(TIME)) fail(`${TIME} not found (Debian package "time")`);
const perlScript = heatmapDir ? join(heatmapDir, 'trace2heatmap.pl') : null;
if (perlScript && !existsSync(perlScript)) fail(`${perlScript} not found`);

/** xorshift32: deterministic uniform numbers in [0, 1). */
function rng(seed) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 4294967296;
  };
}

function generate(file, n) {
  const r = rng(1);
  const out = ['TIME(us) LAT(us)\n'];
  let t = 5_000_000_000; // microseconds since boot
  const meanGap = (20 * 60 * 1e6) / n;
  let chunk = '';
  for (let i = 0; i < n; i++) {
    // Bursts: every so often the gap shrinks tenfold.
    const burst = Math.floor(t / 3e7) % 4 === 0 ? 0.1 : 1;
    t += Math.floor(-Math.log(1 - r()) * meanGap * burst) + 1;
    const u = r();
    const lat =
      u < 0.7
        ? 50 + Math.floor(-Math.log(1 - r()) * 150)
        : u < 0.995
          ? 2000 + Math.floor(r() * 4000)
          : 10000 + Math.floor(r() * 70000);
    chunk += `${t} ${lat}\n`;
    if (chunk.length > 1 << 20) {
      out.push(chunk);
      chunk = '';
    }
  }
  out.push(chunk);
  writeFileSync(file, out.join(''));
}

/** Runs argv (in `env`) under /usr/bin/time with stdout to `outFile`: wall s, cpu s, peak RSS MiB. */
function timed(argv, outFile, env = process.env) {
  const r = spawnSync(TIME, ['-f', '%e %U %S %M', '-o', `${outFile}.time`, ...argv], {
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 1 << 30,
    env,
  });
  if (r.status !== 0) fail(`${argv.join(' ')} failed: ${r.stderr}`);
  writeFileSync(outFile, r.stdout);
  const [wall, user, sys, rss] = readFileSync(`${outFile}.time`, 'utf8')
    .trim()
    .split('\n')
    .pop()
    .split(' ')
    .map(Number);
  return { wall, cpu: user + sys, rss: rss / 1024 };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const cells = (file) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('<rect ') && l.includes('onmouseover'))
    .sort();

mkdirSync(work, { recursive: true });
const trace = join(work, `trace-${lines}.txt`);
if (!existsSync(trace)) generate(trace, lines);
const mb = statSync(trace).size / 2 ** 20;
const env = benchEnv(args);
const ours = [];
const perl = [];
for (let i = 0; i < rounds; i++) {
  ours.push(timed([process.execPath, cli, 'heatmap', ...OPTS, trace], join(work, 'ours.svg'), env));
  if (perlScript) perl.push(timed(['perl', perlScript, ...OPTS, trace], join(work, 'perl.svg'), env));
}
const m = (rs, k) => median(rs.map((x) => x[k]));
const f = (x, d = 2) => x.toFixed(d);
console.log(
  `heatmap: ${lines} lines (${f(mb, 1)} MB), ${rounds} rounds, load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}\n`,
);
console.log('| tool | wall s | CPU s | peak RSS MiB |');
console.log('| --- | ---: | ---: | ---: |');
console.log(`| bpfscope heatmap | ${f(m(ours, 'wall'))} | ${f(m(ours, 'cpu'))} | ${f(m(ours, 'rss'), 1)} |`);
if (perlScript) {
  console.log(`| trace2heatmap.pl | ${f(m(perl, 'wall'))} | ${f(m(perl, 'cpu'))} | ${f(m(perl, 'rss'), 1)} |`);
  const a = cells(join(work, 'ours.svg'));
  const b = cells(join(work, 'perl.svg'));
  const same = a.length === b.length && a.every((x, i) => x === b[i]);
  console.log(
    `\nspeed ratio (Perl / ours): wall ${f(m(perl, 'wall') / m(ours, 'wall'), 1)}x, CPU ${f(m(perl, 'cpu') / m(ours, 'cpu'), 1)}x; ` +
      `RSS ratio (ours / Perl) ${f(m(ours, 'rss') / m(perl, 'rss'))}; same cells: ${same ? 'yes' : 'NO'} (${a.length})`,
  );
} else {
  console.log('\n(HEATMAP_DIR not set: trace2heatmap.pl not run, no comparison)');
}
console.log(`\n${caCertsNote(env, rounds, (argv, e) => timed(argv, join(work, 'node.out'), e))}`);
