#!/usr/bin/env node
// Benchmarks `bpfscope stackcollapse-perf` and `bpfscope flamegraph` against FlameGraph's Perl scripts,
// side by side in one run: for each input and step the two tools alternate (A B A B ...), each run timed with
// /usr/bin/time (wall, user+sys CPU, peak RSS). Reports MB/s of input (1 MB = 2^20 bytes), peak RSS, and the
// ratios, as a Markdown table on stdout.
//
// USAGE: npm run build && FLAMEGRAPH_DIR=/path/to/FlameGraph node bench/flame/run.mjs [options]
//   --rounds N        rounds per input up to 50 MB (default 5); 200 MB inputs get --big-rounds (default 3)
//   --big-rounds N
//   --inputs LIST     comma-separated subset of: synth-20M, synth-200M, example (default: all)
//   --steps LIST      comma-separated subset of: collapse, flamegraph (default: both). The flamegraph step reads
//                     the Perl script's folded output of the collapse step (made by it, or left by an earlier run).
//   --example-copies N  how many times example-perf-stacks.txt.gz is concatenated (default 10)
//   --work DIR        where inputs and outputs go (default $TMPDIR/bpfscope-bench-flame)
//   --no-extra-ca-certs  run both tools without NODE_EXTRA_CA_CERTS (default: the environment as it is; see
//                     node-env.mjs). Either way the output gives `node -e 0`'s time with and without it.
// Inputs: ../shared/bench/gen-perf-script.mjs (--mb 20 / 200, --seed 1) and
// ../shared/testdata/flamegraph/example-perf-stacks.txt.gz, relative to the repository (override the shared
// directory with BPFSCOPE_SHARED). Without FLAMEGRAPH_DIR only our commands run and the comparison is skipped.
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { benchEnv, caCertsNote } from './node-env.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const rounds = Number(opt('rounds', '5'));
const bigRounds = Number(opt('big-rounds', '3'));
const exampleCopies = Number(opt('example-copies', '10'));
const wanted = opt('inputs', 'synth-20M,synth-200M,example').split(',');
const steps = opt('steps', 'collapse,flamegraph').split(',');
for (const s of steps)
  if (s !== 'collapse' && s !== 'flamegraph') fail(`unknown step ${s} (--steps collapse,flamegraph)`);
const work = opt('work', join(tmpdir(), 'bpfscope-bench-flame'));
const shared = process.env.BPFSCOPE_SHARED ?? join(root, '..', 'shared');
const flamegraphDir = process.env.FLAMEGRAPH_DIR;
const cli = join(root, 'dist', 'bundle', 'bpfscope.cjs');
const TIME = '/usr/bin/time';
const env = benchEnv(args);

if (!existsSync(cli)) fail(`${cli} not found: run "npm run build" first`);
if (!existsSync(TIME)) fail(`${TIME} not found (Debian package "time"): it measures peak RSS`);
const perl = flamegraphDir
  ? {
      collapse: join(flamegraphDir, 'stackcollapse-perf.pl'),
      flamegraph: join(flamegraphDir, 'flamegraph.pl'),
    }
  : null;
if (perl && !existsSync(perl.collapse)) fail(`${perl.collapse} not found (FLAMEGRAPH_DIR=${flamegraphDir})`);
mkdirSync(work, { recursive: true });

function fail(msg) {
  process.stderr.write(`bench/flame: ${msg}\n`);
  process.exit(1);
}

/** Makes (or reuses) the input files; returns [{ name, path, bytes, rounds }]. */
function inputs() {
  const out = [];
  for (const mb of [20, 200]) {
    const name = `synth-${mb}M`;
    if (!wanted.includes(name)) continue;
    const path = join(work, `${name}.perf`);
    if (!existsSync(path)) {
      process.stderr.write(`generating ${path}\n`);
      const fd = openSync(path, 'w');
      const r = spawnSync(
        process.execPath,
        [join(shared, 'bench', 'gen-perf-script.mjs'), '--mb', String(mb), '--seed', '1'],
        {
          stdio: ['ignore', fd, 'inherit'],
        },
      );
      closeSync(fd);
      if (r.status !== 0) fail(`gen-perf-script.mjs failed for ${name}`);
    }
    out.push({ name, path, rounds: mb > 50 ? bigRounds : rounds });
  }
  if (wanted.includes('example')) {
    const name = `example-x${exampleCopies}`;
    const path = join(work, `${name}.perf`);
    if (!existsSync(path)) {
      const one = gunzipSync(readFileSync(join(shared, 'testdata', 'flamegraph', 'example-perf-stacks.txt.gz')));
      writeFileSync(path, Buffer.concat(Array(exampleCopies).fill(one)));
    }
    out.push({ name, path, rounds });
  }
  for (const i of out) i.bytes = statSync(i.path).size;
  return out;
}

/** One timed run (in `runEnv`): stdout to `outPath`. Returns { wall, cpu (s), rss (KiB) }. */
function timed(cmd, argv, outPath, runEnv = env) {
  const fd = openSync(outPath, 'w');
  const r = spawnSync(TIME, ['-f', 'BENCH %e %U %S %M', cmd, ...argv], {
    stdio: ['ignore', fd, 'pipe'],
    maxBuffer: 1 << 26,
    env: runEnv,
  });
  closeSync(fd);
  const line = r.stderr
    .toString()
    .split('\n')
    .find((l) => l.startsWith('BENCH '));
  if (r.status !== 0 || !line) fail(`${cmd} ${argv.join(' ')} failed:\n${r.stderr.toString().slice(-2000)}`);
  const [, wall, user, sys, rss] = line.split(' ').map(Number);
  return { wall, cpu: user + sys, rss };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const MB = 1 << 20;

/** Runs A (ours) and B (Perl) alternately `n` times; returns per-tool medians. */
function compare(step, input, n, ours, theirs) {
  const res = { ours: [], perl: [] };
  for (let i = 0; i < n; i++) {
    res.ours.push(timed(ours.cmd, ours.argv, ours.out));
    if (theirs) res.perl.push(timed(theirs.cmd, theirs.argv, theirs.out));
  }
  const summary = (runs) =>
    runs.length
      ? {
          wall: median(runs.map((r) => r.wall)),
          cpu: median(runs.map((r) => r.cpu)),
          rss: Math.max(...runs.map((r) => r.rss)),
        }
      : null;
  return { step, input, n, ours: summary(res.ours), perl: summary(res.perl) };
}

const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const loadStart = loadavg();
const rows = [];
for (const input of inputs()) {
  const base = join(work, input.name);
  process.stderr.write(`${input.name}: ${(input.bytes / MB).toFixed(1)} MB, ${input.rounds} rounds\n`);
  // Step 1: collapse.
  if (steps.includes('collapse')) {
    const c = compare(
      'stackcollapse-perf',
      { ...input },
      input.rounds,
      { cmd: process.execPath, argv: [cli, 'stackcollapse-perf', input.path], out: `${base}.ours.folded` },
      perl && { cmd: 'perl', argv: [perl.collapse, input.path], out: `${base}.perl.folded` },
    );
    if (perl) c.identical = readFileSync(`${base}.ours.folded`).equals(readFileSync(`${base}.perl.folded`));
    rows.push(c);
  }
  if (!steps.includes('flamegraph')) continue;
  // Step 2: render, both from the same folded file.
  const folded = perl ? `${base}.perl.folded` : `${base}.ours.folded`;
  const foldedBytes = statSync(folded).size;
  const f = compare(
    'flamegraph',
    { name: `${input.name} folded`, bytes: foldedBytes },
    input.rounds,
    { cmd: process.execPath, argv: [cli, 'flamegraph', folded], out: `${base}.ours.svg` },
    perl && { cmd: 'perl', argv: [perl.flamegraph, folded], out: `${base}.perl.svg` },
  );
  if (perl) {
    const count = (p) => (readFileSync(p, 'utf8').match(/<title>/g) ?? []).length;
    f.identical = count(`${base}.ours.svg`) === count(`${base}.perl.svg`);
  }
  rows.push(f);
}

const fmt = (x, d = 1) => x.toFixed(d);
const lines = [
  `bench/flame on ${new Date().toISOString().slice(0, 10)}, ${cpus().length} x ${cpus()[0]?.model ?? 'CPU'}, node ${process.version}`,
  '',
  `Load average (1, 5, 15 min) at the start: ${loadStart}; at the end: ${loadavg()}.`,
  '',
  caCertsNote(env, rounds, ([cmd, ...argv], e) => timed(cmd, argv, join(work, 'node.out'), e)),
  '',
  perl
    ? `Perl scripts: ${flamegraphDir}. Medians of interleaved runs (ours, Perl, ours, Perl, ...); MB/s of input by wall time (CPU time in brackets); peak RSS is the largest of the runs.`
    : 'FLAMEGRAPH_DIR is not set: comparison with the Perl scripts skipped; our numbers only.',
  '',
  '| step | input | MB | runs | ours MB/s | ours RSS MiB | Perl MB/s | Perl RSS MiB | speed ratio (wall / CPU) | RSS ratio | same output |',
  '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|',
];
for (const r of rows) {
  const mb = r.input.bytes / MB;
  const o = r.ours;
  const p = r.perl;
  lines.push(
    `| ${r.step} | ${r.input.name} | ${fmt(mb)} | ${r.n} | ${fmt(mb / o.wall)} (${fmt(mb / o.cpu)}) | ${fmt(o.rss / 1024)} | ` +
      (p
        ? `${fmt(mb / p.wall)} (${fmt(mb / p.cpu)}) | ${fmt(p.rss / 1024)} | ${fmt(p.wall / o.wall)}x / ${fmt(p.cpu / o.cpu)}x | ${fmt(o.rss / p.rss, 2)} | ${r.identical ? 'yes' : 'NO'} |`
        : '- | - | - | - | - |'),
  );
}
process.stdout.write(`${lines.join('\n')}\n`);
