/**
 * Per-event overhead (issue 4, item 3): the workload makes N = 5,000,000 getppid(2) calls back to back and reports
 * ns per call (median over chunks of 10,000 calls, robust against preemption on a shared machine; the fastest chunk,
 * the cost on an undisturbed CPU, and the plain mean are kept too). Each round runs the workload untraced once, then
 * every OVERHEAD program under bpfscope and bpftrace (A B A B ...), the workload started by the tracer with `-c` so
 * the probes are live before its first call.
 * Added ns per event = traced - untraced of the same round.
 *
 * `inspect()` dumps the kernel's view of each tracer's programs (`bpftool prog dump xlated`, after the verifier's
 * rewrites, the same view for both tools) into results/xlated/ and counts instructions, helper calls, register
 * moves and stack stores of zero.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { RESULTS_DIR, TRACERS, WORKLOAD } from './env.mjs';
import { launch, sleep } from './proc.mjs';
import { OVERHEAD } from './programs.mjs';

const run = promisify(execFile);

function readResult(path) {
  const r = JSON.parse(readFileSync(path, 'utf8'));
  return { chunkNs: r.chunk_median_ns, minNs: r.chunk_min_ns, meanNs: r.inside_ns / r.calls, calls: r.calls };
}

async function untraced(n, out) {
  await run(WORKLOAD, ['getppid', String(n), '0', out]);
  return readResult(out);
}

async function traced(tracer, prog, n, out) {
  const { cmd, args } = tracer.argv(prog.program, ['-c', `${WORKLOAD} getppid ${n} 0 ${out}`]);
  rmSync(out, { force: true });
  const h = launch({ cmd, args, readyRe: tracer.readyRe, readyOn: tracer.readyOn, timeoutMs: 120000 });
  const ex = await h.exited;
  try {
    return { ok: ex.code === 0, ...readResult(out) };
  } catch {
    return { ok: false, error: `exit ${ex.code ?? ex.signal}: ${h.err().trim().split('\n').slice(-2).join(' / ')}` };
  }
}

/**
 * @param {{ rounds: number, log: Function, n?: number }} opts
 */
export async function runOverhead({ rounds, log, n = 5_000_000 }) {
  const dir = mkdtempSync(join(tmpdir(), 'bpfs-bench-ov-'));
  const out = join(dir, 'result.json');
  const raw = { baseline: [] };
  for (const p of OVERHEAD) raw[p.id] = { bpfscope: [], bpftrace: [] };
  try {
    for (let r = 0; r < rounds; r++) {
      const base = await untraced(n, out);
      raw.baseline.push(base);
      for (const p of OVERHEAD) {
        for (const t of [TRACERS.bpfscope, TRACERS.bpftrace]) {
          const res = await traced(t, p, n, out);
          if (res.ok) {
            res.addedNs = res.chunkNs - base.chunkNs;
            res.addedMinNs = res.minNs - base.minNs;
            res.addedMeanNs = res.meanNs - base.meanNs;
          } else log(`  ${t.name} ${p.id}: FAILED ${res.error}`);
          raw[p.id][t.name].push(res);
        }
      }
      log(`  overhead round ${r + 1}/${rounds} done (untraced ${base.chunkNs.toFixed(1)} ns/call)`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const pick = (id, tool, key) => raw[id][tool].filter((x) => x.ok).map((x) => x[key]);
  const rows = [{ name: 'untraced getppid', unit: 'ns/call', ours: raw.baseline.map((b) => b.chunkNs), peer: null }];
  for (const p of OVERHEAD) {
    rows.push({
      name: `added per call: ${p.title}`,
      unit: 'ns',
      ours: pick(p.id, 'bpfscope', 'addedNs'),
      peer: pick(p.id, 'bpftrace', 'addedNs'),
      ...(p.id === 'unfiltered_empty' ? {} : { target: { op: '<=', ratio: 1.0 } }),
    });
  }
  for (const p of OVERHEAD) {
    rows.push({
      name: `added per call, best chunk: ${p.title}`,
      unit: 'ns',
      ours: pick(p.id, 'bpfscope', 'addedMinNs'),
      peer: pick(p.id, 'bpftrace', 'addedMinNs'),
    });
  }
  // Ratio to the floor (the filtered empty probe) per tool, from the medians.
  const med = (a) => {
    const v = [...a].sort((x, y) => x - y);
    return v.length ? (v.length % 2 ? v[v.length >> 1] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2) : null;
  };
  const floorRows = [];
  for (const tool of ['bpfscope', 'bpftrace']) {
    const floor = med(pick('empty', tool, 'addedNs'));
    for (const p of OVERHEAD) {
      if (p.id === 'empty' || p.id === 'unfiltered_empty') continue;
      const m = med(pick(p.id, tool, 'addedNs'));
      floorRows.push({ tool, id: p.id, title: p.title, ratio: floor && m !== null ? m / floor : null });
    }
  }
  return { rows, raw, floorRows, n };
}

/** Ids of the BPF programs a process holds open (from /proc/PID/fdinfo `prog_id:`). */
function progIds(pid) {
  const ids = [];
  for (const fd of readdirSync(`/proc/${pid}/fdinfo`)) {
    try {
      const m = /prog_id:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'latin1'));
      if (m) ids.push(Number(m[1]));
    } catch {
      /* fd closed meanwhile */
    }
  }
  return [...new Set(ids)];
}

/** Counts in an xlated dump (bpftool's text form): calls by helper, register-to-register moves, zero stores. */
export function analyseXlated(text) {
  const lines = text.split('\n').filter((l) => /^\s*\d+: /.test(l));
  const body = lines.map((l) => l.replace(/^\s*\d+: (\([0-9a-f]{2}\) )?/, ''));
  const calls = {};
  let movs = 0;
  let zeroStores = 0;
  let constLoads = 0;
  for (const b of body) {
    const c = /call (\S+)#/.exec(b) ?? /call (\S+)/.exec(b);
    if (c) calls[c[1]] = (calls[c[1]] ?? 0) + 1;
    if (/^r\d = r\d$/.test(b)) movs++;
    if (/^\*\(u\d+ \*\)\(r10 -\d+\) = 0$/.test(b)) zeroStores++;
    if (/^r\d = -?\d+$/.test(b) || /^r\d = 0x[0-9a-f]+$/.test(b)) constLoads++;
  }
  return { calls, movs, zeroStores, constLoads };
}

/**
 * Run each OVERHEAD program once per tool (workload: `sleep 2`), dump its tracepoint programs' xlated instructions
 * into results/xlated/<program>.<tool>.txt and return the counts.
 */
export async function inspect({ log }) {
  const xdir = join(RESULTS_DIR, 'xlated');
  mkdirSync(xdir, { recursive: true });
  const rows = [];
  for (const p of OVERHEAD) {
    for (const t of [TRACERS.bpfscope, TRACERS.bpftrace]) {
      const { cmd, args } = t.argv(p.program, ['-c', '/usr/bin/sleep 3']);
      const h = launch({ cmd, args, readyRe: t.readyRe, readyOn: t.readyOn, timeoutMs: 30000 });
      const ready = await h.ready;
      const progs = [];
      if (ready !== null) {
        await sleep(700);
        for (const id of progIds(h.pid)) {
          const info = JSON.parse(
            execFileSync('bpftool', ['prog', 'show', 'id', String(id), '-j'], { encoding: 'utf8' }),
          );
          if (info.type !== 'tracepoint') continue;
          const text = execFileSync('bpftool', ['prog', 'dump', 'xlated', 'id', String(id)], { encoding: 'utf8' });
          progs.push({ name: info.name, insns: info.bytes_xlated / 8, text, ...analyseXlated(text) });
        }
      }
      h.signal('SIGINT');
      await h.exited;
      progs.sort((a, b) => a.name.localeCompare(b.name));
      writeFileSync(
        join(xdir, `${p.id}.${t.name}.txt`),
        `# ${t.name}: ${p.program}\n` + progs.map((x) => `\n## ${x.name} (${x.insns} insns)\n${x.text}`).join(''),
      );
      rows.push({
        id: p.id,
        title: p.title,
        tool: t.name,
        programs: progs.map(({ text: _text, ...rest }) => rest),
        insns: progs.reduce((s, x) => s + x.insns, 0),
      });
      if (!progs.length) log(`  inspect ${t.name} ${p.id}: no tracepoint programs found`);
    }
  }
  return rows;
}
