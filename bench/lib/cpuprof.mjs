/**
 * Where bpfscope's own time goes: `node --cpu-prof` on the tracer for (1) startup to attach of the count program
 * (SIGINT at the attach line) and (2) one full-rate streaming run into a pipe. The profiles (V8 .cpuprofile JSON)
 * are kept in bench/.build/cpuprof/ for Chrome DevTools; the summary lists the top functions by self time and the
 * self time per source file.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { BUILD_DIR, CLI, ROOT, SINK, TRACERS, WORKLOAD } from './env.mjs';
import { launch } from './proc.mjs';
import { STARTUP, STREAM_PROGRAM } from './programs.mjs';

function where(url) {
  if (!url) return '(native/VM)';
  if (url.startsWith('node:')) return 'node internals';
  const path = url.replace(/^file:\/\//, '');
  if (path.includes('/node_modules/')) return `node_modules/${path.split('/node_modules/')[1].split('/')[0]}`;
  return relative(ROOT, path).replace(/^(\.\.\/)+.*\/bpfscope-bench\/dist\//, 'dist/');
}

/** Self time (ms) by function and by file from a .cpuprofile; inclusive time (ms) of named functions. */
export function summarizeProfile(profile, inclusiveOf = []) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i];
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  }
  const fn = new Map();
  const file = new Map();
  let total = 0;
  for (const [id, ms] of self) {
    const cf = byId.get(id).callFrame;
    const key = `${cf.functionName || '(anonymous)'} ${cf.url ? `${where(cf.url)}:${cf.lineNumber + 1}` : ''}`.trim();
    fn.set(key, (fn.get(key) ?? 0) + ms);
    const f = cf.url ? where(cf.url) : cf.functionName;
    file.set(f, (file.get(f) ?? 0) + ms);
    total += ms;
  }
  // inclusive time per node, then per requested function name (outermost occurrence only)
  const incl = new Map();
  const inclusive = (id) => {
    if (incl.has(id)) return incl.get(id);
    const n = byId.get(id);
    let t = self.get(id) ?? 0;
    for (const c of n.children ?? []) t += inclusive(c);
    incl.set(id, t);
    return t;
  };
  const named = {};
  const walk = (id, inside) => {
    const n = byId.get(id);
    const name = n.callFrame.functionName;
    let now = inside;
    if (inclusiveOf.includes(name) && !inside.has(name)) {
      named[name] = (named[name] ?? 0) + inclusive(id);
      now = new Set(inside).add(name);
    }
    for (const c of n.children ?? []) walk(c, now);
  };
  walk(profile.nodes[0].id, new Set());
  const top = (m, k) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, k)
      .map(([name, ms]) => ({ name, ms: Math.round(ms * 10) / 10 }));
  return { totalMs: Math.round(total), topFunctions: top(fn, 15), topFiles: top(file, 12), inclusive: named };
}

function newestProfile(dir) {
  const f = readdirSync(dir)
    .filter((x) => x.endsWith('.cpuprofile'))
    .sort()
    .at(-1);
  return f ? JSON.parse(readFileSync(join(dir, f), 'utf8')) : null;
}

const PHASES = ['compile', 'load', 'runBegin', 'attach', 'start', 'drain', 'finish', 'close', 'runProgram'];

/** @param {{ log: Function }} opts */
export async function runCpuProf({ log }) {
  const base = join(BUILD_DIR, 'cpuprof');
  rmSync(base, { recursive: true, force: true });
  const result = {};
  // 1. startup (retried: a SIGPROF that lands during BPF_PROG_LOAD makes the verifier give up with EAGAIN, which
  // bpfscope does not retry yet, so a profiled start can fail)
  for (let attempt = 0; attempt < 3 && !result.startup?.readyMs; attempt++) {
    const dir = join(base, 'startup');
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const t = TRACERS.bpfscope;
    const h = launch({
      cmd: process.execPath,
      args: ['--cpu-prof', '--cpu-prof-dir', dir, CLI, '-e', STARTUP[1].program],
      readyRe: t.readyRe,
      readyOn: t.readyOn,
    });
    const ready = await h.ready;
    h.signal('SIGINT');
    await h.exited;
    const p = ready !== null ? newestProfile(dir) : null;
    result.startup = p
      ? { readyMs: ready, ...summarizeProfile(p, PHASES) }
      : { error: `no profile: ${h.err().trim()}` };
  }
  // 2. streaming at full rate into a pipe
  {
    const dir = join(base, 'streaming');
    mkdirSync(dir, { recursive: true });
    const out = join(dir, 'workload.json');
    const sink = spawn(SINK, [], { stdio: ['pipe', 'ignore', 'inherit'] });
    const h = launch({
      cmd: process.execPath,
      args: [
        '--cpu-prof',
        '--cpu-prof-dir',
        dir,
        CLI,
        '-c',
        `${WORKLOAD} getppid-for 1 0 ${out}`,
        '-e',
        STREAM_PROGRAM,
      ],
      stdout: sink.stdin,
    });
    sink.stdin.destroy();
    await h.exited;
    const p = newestProfile(dir);
    result.streaming = p ? summarizeProfile(p, PHASES) : { error: 'no profile written' };
  }
  log(`  cpu profiles in ${relative(ROOT, base)}/`);
  return result;
}
