#!/usr/bin/env node
/**
 * Soak (issue 19, campaign item 5): three tools and a one-liner with maps run side by side for 30 minutes under a
 * mixed load (exec, block I/O, syscalls); each bpfscope process's memory and CPU are sampled every 10 s.
 *
 *   sudo node bench/reliability/soak.mjs [--minutes 30] [--every 10] [--out DIR]
 *   node bench/reliability/soak.mjs --render [--out DIR]      re-render the SVG and summary from DIR/soak.json
 *
 * Traced (each its own bpfscope process, from a private copy of dist/ so a rebuild during the run changes nothing):
 *   execsnoop                 one line per exec, to a file
 *   biolatency 1              a histogram every second, to a file
 *   profile -F 49             stacks of every CPU at 49 Hz, kept in BPF maps until the end
 *   one-liner                 per-comm syscall counts and a read-size histogram, printed and cleared every 10 s
 * Load (a shell loop): 10 execs of /bin/true per second, 1 MiB written with fsync each second, and a dd copying
 * /dev/zero to /dev/null in 64-byte blocks (about 40,000 syscalls per burst, 5 bursts per second).
 *
 * Samples: for each process every `--every` s, VmRSS and VmHWM (kB, /proc/PID/status) and CPU % over the last
 * interval (utime+stime from /proc/PID/stat, 10 ms ticks), plus the machine's 1-minute load average. Output:
 * DIR/soak.json (every sample and the run's facts), DIR/soak.csv (one row per sample and process), and the plot
 * docs/pictures/reliability/soak.svg (RSS and CPU over time, one line per process). The summary prints, per process,
 * the least-squares slope of RSS over the second half of the run (kB/min), the figure that shows growth or its absence.
 * At the end every process gets SIGINT; its exit code and time from SIGINT to exit are recorded.
 */
import { spawn, spawnSync } from 'node:child_process';
import {
  cpSync,
  createWriteStream,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CLK_TCK, cpuTicks, memKb, sleep } from '../lib/proc.mjs';
import { LOAD_SH } from './mixed-load.mjs';
import { slope } from '../lib/stats.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = dirname(dirname(HERE));
const SVG_PATH = join(ROOT, 'docs', 'pictures', 'reliability', 'soak.svg');

const { values: opts } = parseArgs({
  options: {
    minutes: { type: 'string', default: '30' },
    every: { type: 'string', default: '10' },
    out: { type: 'string', default: join(HERE, 'results') },
    render: { type: 'boolean', default: false },
  },
});

/** Private copy of dist/ (and a node_modules link) so that rebuilding the worktree during the soak changes nothing. */
function snapshotDist() {
  const base = join(tmpdir(), `bpfscope-soak-${process.pid}`);
  rmSync(base, { recursive: true, force: true });
  mkdirSync(base, { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(base, 'node_modules'));
  cpSync(join(ROOT, 'dist'), join(base, 'dist'), { recursive: true });
  return { base, cli: join(base, 'dist', 'bundle', 'bpfscope.cjs') };
}

const ONE_LINER =
  'tracepoint:raw_syscalls:sys_enter { @syscalls[comm] = count(); } ' +
  'tracepoint:syscalls:sys_enter_read { @read_bytes = hist(args.count); } ' +
  'interval:s:10 { print(@syscalls); print(@read_bytes); clear(@syscalls); clear(@read_bytes); }';

const TRACERS = [
  { name: 'execsnoop', args: ['execsnoop'] },
  { name: 'biolatency 1', args: ['biolatency', '1'] },
  { name: 'profile -F 49', args: ['profile', '-F', '49'] },
  { name: 'one-liner', args: ['-e', ONE_LINER] },
];

async function run() {
  const minutes = Number(opts.minutes);
  const everyS = Number(opts.every);
  const out = opts.out;
  mkdirSync(out, { recursive: true });
  const { base, cli } = snapshotDist();
  const commit = spawnSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim();
  const env = { ...process.env };
  delete env.NODE_EXTRA_CA_CERTS;

  const procs = [];
  for (const t of TRACERS) {
    const stdoutPath = join(out, `soak-${t.name.split(' ')[0]}.out`);
    const stdout = createWriteStream(stdoutPath);
    const stderrChunks = [];
    const child = spawn(cli, t.args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.pipe(stdout);
    child.stderr.on('data', (d) => stderrChunks.push(d));
    const exited = new Promise((resolve) =>
      child.on('exit', (code, signal) => resolve({ code, signal, at: performance.now() })),
    );
    procs.push({ ...t, child, stdoutPath, stderrChunks, exited, lastTicks: cpuTicks(child.pid) });
  }
  // Wait until every tracer has attached (its "Attached"/"Tracing" notice on stderr or first stdout) before loading.
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const ready = procs.every(
      (p) =>
        /Attach|Tracing|Sampling/.test(Buffer.concat(p.stderrChunks).toString()) ||
        p.child.stdout.readableLength > 0 ||
        (existsSync(p.stdoutPath) && readFileSync(p.stdoutPath, 'utf8').length > 0),
    );
    if (ready) break;
    await sleep(200);
  }
  const load = spawn('sh', ['-c', LOAD_SH(base)], { stdio: 'ignore', detached: true });

  const t0 = performance.now();
  const samples = [];
  for (const p of procs) p.lastTicks = cpuTicks(p.child.pid);
  let lastT = t0;
  const endAt = t0 + minutes * 60_000;
  process.stderr.write(`soak: ${minutes} min, sampling every ${everyS} s into ${out}\n`);
  while (performance.now() < endAt) {
    await sleep(everyS * 1000);
    const now = performance.now();
    const row = { t: Math.round((now - t0) / 1000), load1: Math.round(loadavg()[0] * 100) / 100, procs: {} };
    for (const p of procs) {
      const ticks = cpuTicks(p.child.pid);
      const mem = memKb(p.child.pid);
      const cpu =
        ticks == null || p.lastTicks == null ? null : ((ticks - p.lastTicks) / CLK_TCK / ((now - lastT) / 1000)) * 100;
      p.lastTicks = ticks;
      row.procs[p.name] = {
        rssKb: mem?.rssKb ?? null,
        hwmKb: mem?.hwmKb ?? null,
        cpuPct: cpu == null ? null : Math.round(cpu * 100) / 100,
      };
    }
    lastT = now;
    samples.push(row);
    process.stderr.write(
      `soak: t=${row.t}s load=${row.load1} ` +
        procs.map((p) => `${p.name}: ${row.procs[p.name].rssKb} kB ${row.procs[p.name].cpuPct}%`).join(', ') +
        '\n',
    );
  }
  try {
    process.kill(-load.pid, 'SIGKILL');
  } catch {
    /* gone */
  }
  const ends = [];
  for (const p of procs) {
    const sent = performance.now();
    p.child.kill('SIGINT');
    const e = await Promise.race([p.exited, sleep(60_000).then(() => null)]);
    if (!e) p.child.kill('SIGKILL');
    ends.push({
      name: p.name,
      code: e?.code ?? null,
      signal: e ? e.signal : 'SIGKILL after 60 s',
      sigintToExitMs: e ? Math.round(e.at - sent) : null,
      stderrTail: Buffer.concat(p.stderrChunks).toString().split('\n').slice(-4).join('\n'),
    });
  }
  for (const p of procs) {
    const text = readFileSync(p.stdoutPath, 'utf8');
    const e = ends.find((x) => x.name === p.name);
    e.stdoutBytes = Buffer.byteLength(text);
    e.stdoutLines = text.split('\n').length - 1;
  }
  rmSync(base, { recursive: true, force: true });
  const result = {
    commit,
    startedAt: new Date(Date.now() - (performance.now() - t0)).toISOString(),
    minutes,
    everyS,
    oneLiner: ONE_LINER,
    tracers: TRACERS.map((t) => t.name),
    samples,
    ends,
  };
  writeFileSync(join(out, 'soak.json'), JSON.stringify(result, null, 1) + '\n');
  render(result, out);
}

function summarize(result) {
  const names = result.tracers;
  const half = result.samples.filter((s) => s.t >= (result.minutes * 60) / 2);
  const rows = names.map((n) => {
    const xs = half.map((s) => s.t / 60);
    const ys = half.map((s) => s.procs[n].rssKb);
    const all = result.samples.map((s) => s.procs[n]);
    const cpus = all.map((p) => p.cpuPct).filter((v) => v != null);
    return {
      name: n,
      rssFirstKb: all[0]?.rssKb,
      rssLastKb: all.at(-1)?.rssKb,
      rssMaxKb: Math.max(...all.map((p) => p.rssKb ?? 0)),
      hwmKb: all.at(-1)?.hwmKb,
      slopeKbPerMin: Math.round((slope(xs, ys) ?? NaN) * 10) / 10,
      cpuMeanPct: Math.round((cpus.reduce((a, b) => a + b, 0) / cpus.length) * 100) / 100,
      cpuMaxPct: Math.max(...cpus),
    };
  });
  const loads = result.samples.map((s) => s.load1);
  return {
    rows,
    loadMin: Math.min(...loads),
    loadMax: Math.max(...loads),
    loadMean: Math.round((loads.reduce((a, b) => a + b, 0) / loads.length) * 10) / 10,
  };
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd'];

/** An SVG of two stacked line charts (RSS in MB, CPU in %) over minutes, one line per process, with a legend. */
export function soakSvg(result) {
  const W = 900;
  const PH = 260;
  const M = { l: 64, r: 20, t: 40, b: 40 };
  const names = result.tracers;
  const tMax = Math.max(result.minutes, ...result.samples.map((s) => s.t / 60));
  const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const nice = (v) => {
    const p = 10 ** Math.floor(Math.log10(v));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
    return 10 * p;
  };
  const parts = [];
  const panel = (y0, title, unit, get) => {
    const vals = result.samples.flatMap((s) => names.map((n) => get(s.procs[n]))).filter((v) => v != null);
    const yMax = nice(Math.max(1, ...vals) * 1.1);
    const x = (t) => M.l + (t / tMax) * (W - M.l - M.r);
    const y = (v) => y0 + PH - (v / yMax) * PH;
    parts.push(`<text x="${M.l}" y="${y0 - 10}" font-size="14" font-weight="bold">${esc(title)}</text>`);
    for (let i = 0; i <= 5; i++) {
      const v = (yMax * i) / 5;
      parts.push(`<line x1="${M.l}" x2="${W - M.r}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`);
      parts.push(
        `<text x="${M.l - 6}" y="${y(v) + 4}" font-size="11" text-anchor="end">${+v.toFixed(2)}${unit}</text>`,
      );
    }
    const step = tMax > 20 ? 5 : tMax > 5 ? 1 : 0.5;
    for (let t = 0; t <= tMax + 1e-9; t += step) {
      parts.push(`<line x1="${x(t)}" x2="${x(t)}" y1="${y0}" y2="${y0 + PH}" stroke="#eee"/>`);
      parts.push(`<text x="${x(t)}" y="${y0 + PH + 16}" font-size="11" text-anchor="middle">${t} min</text>`);
    }
    names.forEach((n, i) => {
      const pts = result.samples
        .filter((s) => get(s.procs[n]) != null)
        .map((s) => `${x(s.t / 60).toFixed(1)},${y(get(s.procs[n])).toFixed(1)}`);
      parts.push(
        `<polyline fill="none" stroke="${COLORS[i % COLORS.length]}" stroke-width="1.5" points="${pts.join(' ')}"/>`,
      );
    });
    parts.push(`<rect x="${M.l}" y="${y0}" width="${W - M.l - M.r}" height="${PH}" fill="none" stroke="#888"/>`);
  };
  const sum = summarize(result);
  panel(M.t + 30, 'Resident memory (VmRSS) of each bpfscope process', ' MB', (p) =>
    p.rssKb == null ? null : p.rssKb / 1024,
  );
  panel(
    M.t + 30 + PH + 80,
    `CPU per process over each ${result.everyS} s interval (100% = one CPU)`,
    '%',
    (p) => p.cpuPct,
  );
  const H = M.t + 30 + 2 * (PH + 80) + 10;
  const legend = names
    .map((n, i) => {
      const r = sum.rows[i];
      return `<g transform="translate(${M.l},${H + i * 18})"><rect width="14" height="4" y="-5" fill="${COLORS[i]}"/><text x="20" font-size="12">${esc(n)}: RSS ${(r.rssFirstKb / 1024).toFixed(1)} → ${(r.rssLastKb / 1024).toFixed(1)} MB, 2nd-half slope ${r.slopeKbPerMin} kB/min, CPU mean ${r.cpuMeanPct}%</text></g>`;
    })
    .join('');
  const title = `bpfscope soak: ${result.minutes} min, commit ${result.commit}, load average ${sum.loadMin}-${sum.loadMax} (shared 2-CPU VM)`;
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H + 18 * names.length + 20}" viewBox="0 0 ${W} ${H + 18 * names.length + 20}" font-family="sans-serif">` +
    `<rect width="100%" height="100%" fill="white"/><text x="${M.l}" y="24" font-size="16" font-weight="bold">${esc(title)}</text>` +
    parts.join('') +
    legend +
    '</svg>\n'
  );
}

function render(result, out) {
  mkdirSync(dirname(SVG_PATH), { recursive: true });
  writeFileSync(SVG_PATH, soakSvg(result));
  const csv = ['t_s,load1,process,rss_kb,hwm_kb,cpu_pct'];
  for (const s of result.samples)
    for (const n of result.tracers)
      csv.push(`${s.t},${s.load1},"${n}",${s.procs[n].rssKb},${s.procs[n].hwmKb},${s.procs[n].cpuPct}`);
  writeFileSync(join(out, 'soak.csv'), csv.join('\n') + '\n');
  const sum = summarize(result);
  console.log(JSON.stringify({ ...sum, ends: result.ends }, null, 1));
}

if (opts.render) {
  render(JSON.parse(readFileSync(join(opts.out, 'soak.json'), 'utf8')), opts.out);
} else {
  await run();
}
