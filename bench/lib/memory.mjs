/**
 * Memory (issue 4, item 5): peak RSS (VmHWM from /proc/PID/status, sampled every 2 ms until exit) of each tracer for
 * the startup programs, and for the read latency program after 5 s of load (1-byte reads of /dev/zero from the
 * workload, as fast as it can), interleaving bpfscope and bpftrace.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TRACERS, WORKLOAD } from './env.mjs';
import { launch } from './proc.mjs';
import { LATENCY_PROGRAM, STARTUP } from './programs.mjs';
import { startOnce } from './startup.mjs';

async function underLoad(tracer, seconds, dir) {
  const { cmd, args } = tracer.argv(LATENCY_PROGRAM);
  const h = launch({ cmd, args, readyRe: tracer.readyRe, readyOn: tracer.readyOn, timeoutMs: 60000 });
  const readyMs = await h.ready;
  if (readyMs === null) {
    await h.exited;
    return { ok: false, error: h.err().trim().split('\n').slice(-2).join(' / ') };
  }
  const out = join(dir, `load-${tracer.name}.json`);
  execFileSync(WORKLOAD, ['read', String(seconds), out]);
  h.sampleNow();
  const hwmAfterLoadKb = h.peakHwmKb;
  const rssAfterLoadKb = h.samples.at(-1)?.rssKb ?? null;
  h.signal('SIGINT');
  const ex = await h.exited;
  return { ok: ex.code === 0, peakKb: h.peakHwmKb, hwmAfterLoadKb, rssAfterLoadKb, exitMs: ex.ms };
}

/**
 * @param {{ rounds: number, log: Function, startupMemoryRows?: object[], seconds?: number }} opts
 *   `startupMemoryRows`: the startup section's peak RSS rows when it ran in the same invocation (not re-measured)
 */
export async function runMemory({ rounds, log, startupMemoryRows, seconds = 5 }) {
  const dir = mkdtempSync(join(tmpdir(), 'bpfs-bench-mem-'));
  const rows = [];
  try {
    if (startupMemoryRows) rows.push(...startupMemoryRows);
    else {
      for (const p of STARTUP) {
        const ours = [];
        const peer = [];
        for (let r = 0; r < rounds; r++) {
          const a = await startOnce(TRACERS.bpfscope, p);
          const b = await startOnce(TRACERS.bpftrace, p);
          if (a.ok) ours.push(a.peakKb / 1024);
          if (b.ok) peer.push(b.peakKb / 1024);
        }
        rows.push({ name: `peak RSS: ${p.title}`, unit: 'MB', ours, peer, target: { op: '<=', ratio: 0.6 } });
      }
    }
    const raw = { bpfscope: [], bpftrace: [] };
    for (let r = 0; r < rounds; r++) {
      for (const t of [TRACERS.bpfscope, TRACERS.bpftrace]) {
        const res = await underLoad(t, seconds, dir);
        raw[t.name].push(res);
        if (!res.ok) log(`  ${t.name} latency under load: FAILED ${res.error ?? ''}`);
      }
      log(`  memory round ${r + 1}/${rounds} done`);
    }
    const pick = (tool, key) => raw[tool].filter((x) => x.ok).map((x) => x[key] / 1024);
    rows.push({
      name: `peak RSS: read latency hist, ${seconds} s of reads under load, until exit`,
      unit: 'MB',
      ours: pick('bpfscope', 'peakKb'),
      peer: pick('bpftrace', 'peakKb'),
      target: { op: '<=', ratio: 0.6 },
    });
    rows.push({
      name: `RSS at the end of the ${seconds} s load (before SIGINT)`,
      unit: 'MB',
      ours: pick('bpfscope', 'rssAfterLoadKb'),
      peer: pick('bpftrace', 'rssAfterLoadKb'),
    });
    return { rows, raw };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
