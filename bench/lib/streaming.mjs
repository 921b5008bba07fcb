/**
 * Event streaming (issue 4, item 4): `printf("%d %d\n", tid, nsecs)` on every getppid of the workload, which runs
 * for a fixed time (1 s) at full rate or throttled (calls in 1 ms batches), its output going to a file or through a
 * pipe to bench/c/sink.c. Per run:
 * - events/s printed: event lines delivered / (last line's arrival - workload start). Pipe: the sink stamps the
 *   arrival; file: the last time the file grew (sampled every 2 ms).
 * - lost: the tracers' "Lost N events" messages (bpfscope on stderr, bpftrace 0.17 on stdout), and calls - lines.
 * - tracer CPU per event: utime+stime (/proc/PID/stat) from the workload's start to the last line, / lines.
 * - wakeups: "IRQ work interrupts" (IWI in /proc/interrupts, all CPUs) during the run, per 1,000 events: how the
 *   kernel wakes a waiting reader from the traced CPU (ring buffer and perf buffer alike); ~0 on an idle machine.
 * - cost inside the traced syscall: the workload's ns per call (full rate: median over 10,000-call chunks;
 *   throttled: mean over the timed batches) minus the untraced workload's of the same round and rate.
 */
import { execFile, spawn } from 'node:child_process';
import { closeSync, existsSync, fstatSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { lostIn, SINK, TRACERS, WORKLOAD } from './env.mjs';
import { CLK_TCK, cpuAfter, launch } from './proc.mjs';
import { STREAM_PROGRAM } from './programs.mjs';

const run = promisify(execFile);

export const STREAM_CONFIGS = [
  { id: 'full_pipe', rate: 0, sink: 'pipe' },
  { id: 'full_file', rate: 0, sink: 'file' },
  { id: '1m_pipe', rate: 1_000_000, sink: 'pipe' },
  { id: '100k_pipe', rate: 100_000, sink: 'pipe' },
  { id: '100k_file', rate: 100_000, sink: 'file' },
  { id: '10k_pipe', rate: 10_000, sink: 'pipe' },
];

/** Sum of the "IRQ work interrupts" counters over all CPUs. */
function irqWork() {
  const line = readFileSync('/proc/interrupts', 'latin1')
    .split('\n')
    .find((l) => l.trimStart().startsWith('IWI:'));
  if (!line) return null;
  return line
    .trim()
    .split(/\s+/)
    .slice(1)
    .filter((x) => /^\d+$/.test(x))
    .reduce((a, x) => a + Number(x), 0);
}

const rateName = (r) => (r === 0 ? 'full rate' : r >= 1e6 ? `${r / 1e6}M/s` : `${r / 1e3}k/s`);

function nsPerCall(res) {
  return res.chunks > 0 ? res.chunk_median_ns : res.inside_ns / res.calls;
}

async function countFile(path) {
  const { stdout } = await run('sh', ['-c', `exec "${SINK}" < "${path}"`]);
  return JSON.parse(stdout);
}

export async function streamOnce(tracer, cfg, seconds, dir) {
  const out = join(dir, 'workload.json');
  const started = `${out}.started`;
  rmSync(out, { force: true });
  rmSync(started, { force: true });
  const file = join(dir, 'stream.txt');
  let sink = null;
  let sinkOut = '';
  let fd = null;
  let stdout;
  if (cfg.sink === 'pipe') {
    sink = spawn(SINK, [], { stdio: ['pipe', 'pipe', 'inherit'] });
    sink.stdout.on('data', (d) => {
      sinkOut += d;
    });
    stdout = sink.stdin;
  } else {
    fd = openSync(file, 'w');
    stdout = fd;
  }
  const sinkDone = sink ? new Promise((r) => sink.on('close', r)) : null;
  let startSample = null;
  let lastSize = 0;
  let lastGrowNs = null;
  let lastGrowSample = null;
  const { cmd, args } = tracer.argv(STREAM_PROGRAM, ['-c', `${WORKLOAD} getppid-for ${seconds} ${cfg.rate} ${out}`]);
  const iwi0 = irqWork();
  const h = launch({
    cmd,
    args,
    stdout,
    timeoutMs: 120000,
    onSample: (s) => {
      if (!startSample && s.cpu !== null && existsSync(started)) startSample = s;
      if (fd !== null) {
        const size = fstatSync(fd).size;
        if (size !== lastSize) {
          lastSize = size;
          lastGrowNs = s.tNs;
          lastGrowSample = s;
        }
      }
    },
  });
  if (sink) sink.stdin.destroy();
  const ex = await h.exited;
  const iwi1 = irqWork();
  let counts;
  let lastNs;
  if (sink) {
    await sinkDone;
    counts = JSON.parse(sinkOut);
    lastNs = counts.last_ns;
  } else {
    closeSync(fd);
    counts = await countFile(file);
    lastNs = lastGrowNs;
    counts.bytes = lastSize;
  }
  rmSync(file, { force: true });
  let w;
  try {
    w = JSON.parse(readFileSync(out, 'utf8'));
  } catch {
    return { ok: false, error: `exit ${ex.code ?? ex.signal}: ${h.err().trim().split('\n').slice(-2).join(' / ')}` };
  }
  const events = counts.events;
  const lostReported = counts.lost + lostIn(h.err());
  const spanS = lastNs && events ? (lastNs - w.start_ns) / 1e9 : null;
  const cpuEnd = sink ? cpuAfter(h.samples, lastNs ?? 0) : (lastGrowSample?.cpu ?? h.samples.at(-1)?.cpu);
  const cpuTicks = startSample && cpuEnd !== null ? cpuEnd - startSample.cpu : null;
  return {
    ok: ex.code === 0,
    calls: w.calls,
    events,
    lostReported,
    missing: w.calls - events,
    eventsPerS: spanS ? events / spanS : null,
    cpuNsPerEvent: cpuTicks !== null && events ? (cpuTicks * (1e9 / CLK_TCK)) / events : null,
    cpuMs: cpuTicks !== null ? cpuTicks * (1000 / CLK_TCK) : null,
    nsPerCall: nsPerCall(w),
    irqWorkPer1k: iwi0 !== null && iwi1 !== null && events ? ((iwi1 - iwi0) * 1000) / events : null,
    bytes: counts.bytes,
    drainAfterWorkloadMs: lastNs ? (lastNs - w.end_ns) / 1e6 : null,
  };
}

/**
 * @param {{ rounds: number, log: Function, seconds?: number }} opts
 */
export async function runStreaming({ rounds, log, seconds = 1 }) {
  const dir = mkdtempSync(join(tmpdir(), 'bpfs-bench-stream-'));
  const raw = { baseline: {} };
  for (const c of STREAM_CONFIGS) raw[c.id] = { bpfscope: [], bpftrace: [] };
  const rates = [...new Set(STREAM_CONFIGS.map((c) => c.rate))];
  for (const r of rates) raw.baseline[r] = [];
  try {
    for (let r = 0; r < rounds; r++) {
      const base = {};
      for (const rate of rates) {
        const out = join(dir, 'base.json');
        await run(WORKLOAD, ['getppid-for', String(seconds), String(rate), out]);
        base[rate] = nsPerCall(JSON.parse(readFileSync(out, 'utf8')));
        raw.baseline[rate].push(base[rate]);
      }
      for (const c of STREAM_CONFIGS) {
        for (const t of [TRACERS.bpfscope, TRACERS.bpftrace]) {
          const res = await streamOnce(t, c, seconds, dir);
          if (res.ok) res.addedNs = res.nsPerCall - base[c.rate];
          else log(`  ${t.name} ${c.id}: FAILED ${res.error}`);
          raw[c.id][t.name].push(res);
        }
      }
      log(`  streaming round ${r + 1}/${rounds} done`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const pick = (id, tool, key) => raw[id][tool].filter((x) => x.ok).map((x) => x[key]);
  const rows = [];
  for (const c of STREAM_CONFIGS) {
    const label = `${rateName(c.rate)} → ${c.sink}`;
    rows.push({
      name: `events/s printed, ${label}`,
      unit: 'events/s',
      ours: pick(c.id, 'bpfscope', 'eventsPerS'),
      peer: pick(c.id, 'bpftrace', 'eventsPerS'),
      ...(c.rate === 0 ? { target: { op: '>=', ratio: 20 } } : {}),
    });
    rows.push({
      name: `events lost (calls - lines), ${label}`,
      unit: 'events',
      ours: pick(c.id, 'bpfscope', 'missing'),
      peer: pick(c.id, 'bpftrace', 'missing'),
      target: { absolute: { op: '<=', value: 0 } },
    });
    rows.push({
      name: `"Lost N events" reported, ${label}`,
      unit: 'events',
      ours: pick(c.id, 'bpfscope', 'lostReported'),
      peer: pick(c.id, 'bpftrace', 'lostReported'),
    });
    rows.push({
      name: `tracer CPU per event, ${label}`,
      unit: 'ns',
      ours: pick(c.id, 'bpfscope', 'cpuNsPerEvent'),
      peer: pick(c.id, 'bpftrace', 'cpuNsPerEvent'),
    });
    rows.push({
      name: `irq_work interrupts (wakeups) per 1,000 events, ${label}`,
      unit: '',
      ours: pick(c.id, 'bpfscope', 'irqWorkPer1k'),
      peer: pick(c.id, 'bpftrace', 'irqWorkPer1k'),
    });
    rows.push({
      name: `added inside the traced syscall, ${label}`,
      unit: 'ns/call',
      ours: pick(c.id, 'bpfscope', 'addedNs'),
      peer: pick(c.id, 'bpftrace', 'addedNs'),
      target: { op: '<=', ratio: 0.02 },
    });
  }
  for (const rate of rates) {
    rows.push({ name: `untraced getppid, ${rateName(rate)}`, unit: 'ns/call', ours: raw.baseline[rate], peer: null });
  }
  return { rows, raw, seconds };
}
