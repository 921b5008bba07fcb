#!/usr/bin/env node
/**
 * Typed events through the API (issue 13): `printf("%d %d\n", tid, nsecs)` on every getppid of the workload at full
 * rate for 1 s (bench/lib/programs.mjs STREAM_PROGRAM), read three ways in one run (and the API twice more), interleaved per round:
 * - api: trace() + `for await (const ev of t.events())` reading each event's typed values (bench/api/consumer.mjs),
 *   and the same through `t.batches()` (one await per batch);
 * - cli: `bpfscope -e` printing text lines through a pipe to bench/c/sink.c (as bench/lib/streaming.mjs);
 * - bpftrace: Debian's bpftrace 0.17, the same way;
 * - api8/batches8: events() and batches() again with the printf eight times per call (STREAM8_PROGRAM), the
 *   reader's own ceiling (events lost then = 8 x calls - events read).
 * Per run: events/s = events read / (last event read - workload start) and the cost added inside the traced
 * syscall = the workload's ns per call (median over 10,000-call chunks) minus the untraced workload's, same round.
 * Not a test: prints a Markdown table and writes bench/results/api.json. Usage: sudo node bench/api/run.mjs [--rounds N]
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { buildHelpers, checkBuilt, ensurePeers, RESULTS_DIR, ROOT, TRACERS, WORKLOAD } from '../lib/env.mjs';
import { STREAM8_PROGRAM, STREAM_PROGRAM } from '../lib/programs.mjs';
import { num, stats } from '../lib/stats.mjs';
import { streamOnce } from '../lib/streaming.mjs';

const run = promisify(execFile);
const argv = process.argv.slice(2);
const rounds = argv.includes('--rounds') ? Number(argv[argv.indexOf('--rounds') + 1]) : 5;
const SECONDS = 1;
const nsPerCall = (w) => (w.chunks > 0 ? w.chunk_median_ns : w.inside_ns / w.calls);

async function apiOnce(dir, mode, program = STREAM_PROGRAM, perCall = 1) {
  const out = join(dir, 'api-workload.json');
  rmSync(out, { force: true });
  const command = `${WORKLOAD} getppid-for ${SECONDS} 0 ${out}`;
  const index = join(ROOT, 'dist', 'src', 'index.js');
  const { stdout } = await run(
    process.execPath,
    [join(ROOT, 'bench', 'api', 'consumer.mjs'), index, mode, program, command],
    {
      maxBuffer: 1 << 20,
    },
  );
  const r = JSON.parse(stdout);
  const w = JSON.parse(readFileSync(out, 'utf8'));
  return {
    ok: true,
    calls: w.calls,
    events: r.events,
    lostReported: r.lost,
    missing: w.calls * perCall - r.events,
    eventsPerS: r.lastNs ? r.events / ((r.lastNs - w.start_ns) / 1e9) : null,
    cpuNsPerEvent: r.events ? (r.cpuMs * 1e6) / r.events : null,
    nsPerCall: nsPerCall(w),
  };
}

async function main() {
  if (process.getuid?.() !== 0) throw new Error('run it as root');
  checkBuilt();
  ensurePeers();
  buildHelpers();
  const dir = mkdtempSync(join(tmpdir(), 'bpfs-bench-api-'));
  const load0 = loadavg()[0];
  const raw = { baseline: [], api: [], batches: [], cli: [], bpftrace: [], api8: [], batches8: [] };
  try {
    for (let r = 0; r < rounds; r++) {
      const out = join(dir, 'base.json');
      await run(WORKLOAD, ['getppid-for', String(SECONDS), '0', out]);
      const base = nsPerCall(JSON.parse(readFileSync(out, 'utf8')));
      raw.baseline.push(base);
      const cfg = { rate: 0, sink: 'pipe' };
      for (const [name, once] of [
        ['api', () => apiOnce(dir, 'events')],
        ['batches', () => apiOnce(dir, 'batches')],
        ['cli', () => streamOnce(TRACERS.bpfscope, cfg, SECONDS, dir)],
        ['bpftrace', () => streamOnce(TRACERS.bpftrace, cfg, SECONDS, dir)],
        ['api8', () => apiOnce(dir, 'events', STREAM8_PROGRAM, 8)],
        ['batches8', () => apiOnce(dir, 'batches', STREAM8_PROGRAM, 8)],
      ]) {
        const res = await once();
        if (res.ok) res.addedNs = res.nsPerCall - base;
        else console.error(`  ${name}: FAILED ${res.error}`);
        raw[name].push(res);
      }
      console.error(`  round ${r + 1}/${rounds} done`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const med = (name, key) => stats(raw[name].filter((x) => x.ok).map((x) => x[key]));
  const metrics = [
    ['events/s read', 'eventsPerS'],
    ['events lost (calls - events read)', 'missing'],
    ['added inside the traced syscall, ns/call', 'addedNs'],
    ['reader CPU per event, ns', 'cpuNsPerEvent'],
  ];
  const lines = [
    `load average ${load0.toFixed(1)} → ${loadavg()[0].toFixed(1)}, ${rounds} rounds, medians (min–max)`,
    '',
    '| metric | api: events() | api: batches() | cli (text → pipe) | bpftrace 0.17 (→ pipe) | events()/cli | batches()/cli | events()/bpftrace |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const [label, key] of metrics) {
    const a = med('api', key);
    const bt = med('batches', key);
    const c = med('cli', key);
    const b = med('bpftrace', key);
    const cell = (s) => (s ? `${num(s.median)} (${num(s.min)}–${num(s.max)})` : '–');
    const ratio = (x, y) => (x && y && y.median !== 0 ? `${(x.median / y.median).toFixed(2)}x` : '–');
    lines.push(
      `| ${label} | ${cell(a)} | ${cell(bt)} | ${cell(c)} | ${cell(b)} | ${ratio(a, c)} | ${ratio(bt, c)} | ${ratio(a, b)} |`,
    );
  }
  lines.push(
    '',
    'The same printf eight times per call (`unroll(8)`, bench/lib/programs.mjs STREAM8_PROGRAM): the producer is no',
    "longer the limit, so this shows the typed reader's own ceiling.",
    '',
    '| metric | api: events() | api: batches() |',
    '|---|---|---|',
  );
  for (const [label, key] of metrics.filter(([, k]) => k !== 'addedNs')) {
    const cell = (s) => (s ? `${num(s.median)} (${num(s.min)}–${num(s.max)})` : '–');
    lines.push(`| ${label} | ${cell(med('api8', key))} | ${cell(med('batches8', key))} |`);
  }
  const u = stats(raw.baseline);
  lines.push('', `untraced getppid: ${num(u?.median)} ns/call`);
  writeFileSync(join(RESULTS_DIR, 'api.json'), `${JSON.stringify({ rounds, raw, load0 }, null, 1)}\n`);
  console.log(lines.join('\n'));
}

main().catch((e) => {
  console.error(e instanceof Error ? e.message : String(e));
  process.exit(1);
});
