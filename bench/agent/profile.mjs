#!/usr/bin/env node
/**
 * Where the agent's CPU and memory go (issue 15), bench-only: runs `bpfscope agent` in this process (the compiled
 * dist/src modules, pushing to a local sink that accepts every push) and, once the BPF program is loaded (so that
 * the profiler cannot make BPF_PROG_LOAD fail), profiles the main thread with node:inspector's CPU profiler for
 * `--seconds` (default 40). Then it prints the functions by self time, the agent's own counters, and, with `--heap`,
 * a heap snapshot summarized by constructor (self size). Never part of the product: the inspector is opened here
 * only, in a bench run.
 *
 * Usage: sudo node bench/agent/profile.mjs [--seconds N] [--period 10s] [--heap] [--out FILE.cpuprofile]
 */
import { Session } from 'node:inspector/promises';
import { createServer } from 'node:http';
import { writeFileSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';
import { ROOT } from '../lib/env.mjs';

const argv = process.argv.slice(2);
const opt = (n, d) => (argv.includes(n) ? argv[argv.indexOf(n) + 1] : d);
const SECONDS = Number(opt('--seconds', '40'));
const PERIOD = opt('--period', '10s');
const OUT = opt('--out', undefined);

const sink = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'Content-Type': 'application/proto' }).end());
});
await new Promise((r) => sink.listen(0, '127.0.0.1', r));
const { parseAgentArgs, runAgent } = await import(join(ROOT, 'dist', 'src', 'fleet', 'agent', 'main.js'));
const { Profiler } = await import(join(ROOT, 'dist', 'src', 'fleet', 'agent', 'profiler.js'));
// ELF symbol tables loaded, by file (a table loaded twice was dropped in between)
const { SymbolResolver } = await import(join(ROOT, 'dist', 'src', 'symbols', 'resolver.js'));
const elfLoads = new Map();
const loadElf = SymbolResolver.prototype.loadElf;
SymbolResolver.prototype.loadElf = function (fd, path, root) {
  const t = performance.now();
  const r = loadElf.call(this, fd, path, root);
  const e = elfLoads.get(path) ?? { n: 0, ms: 0 };
  e.n++;
  e.ms += performance.now() - t;
  elfLoads.set(path, e);
  return r;
};
// the running profiler, for its counters: wrap Profiler.start
let profiler;
const start = Profiler.start.bind(Profiler);
Profiler.start = async (...a) => (profiler = await start(...a));
const cfg = parseAgentArgs([
  `--pyroscope=http://127.0.0.1:${sink.address().port}`,
  '--hz=49',
  `--period=${PERIOD}`,
  '--no-metrics',
]);
const done = runAgent(cfg);
while (!profiler) await new Promise((r) => setTimeout(r, 100));
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 1000 });
const load0 = loadavg()[0];
const cpu0 = process.cpuUsage();
const t0 = performance.now();
elfLoads.clear();
await session.post('Profiler.start');
await new Promise((r) => setTimeout(r, SECONDS * 1000));
const { profile } = await session.post('Profiler.stop');
const cpu = process.cpuUsage(cpu0);
const wall = (performance.now() - t0) / 1000;
if (OUT) writeFileSync(OUT, JSON.stringify(profile));

// self time per function (url:line name), from the samples
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map();
const dt = profile.timeDeltas;
for (let i = 0; i < profile.samples.length; i++) {
  const n = byId.get(profile.samples[i]);
  const f = n.callFrame;
  const key = `${f.functionName || '(anon)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}`;
  self.set(key, (self.get(key) ?? 0) + (dt[i] ?? 0));
}
// inclusive time of the agent's own functions (by name)
const total = new Map();
const walk = (n, stack) => {
  const name = n.callFrame.functionName;
  const own = n.hitCount ?? 0;
  const names = new Set(stack);
  if (name) names.add(name);
  for (const s of names) total.set(s, (total.get(s) ?? 0) + own);
  for (const c of n.children ?? []) walk(byId.get(c), [...names]);
};
walk(profile.nodes[0], []);
const sampled = profile.samples.length;
const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, 30);
let md = `main thread CPU profile over ${wall.toFixed(1)} s, load average ${load0.toFixed(1)} -> ${loadavg()[0].toFixed(1)}; `;
md += `process CPU (all threads) ${(((cpu.user + cpu.system) / 1e6 / wall) * 100).toFixed(2)}% of one CPU\n\n`;
md += '| self ms | function |\n|---:|---|\n';
for (const [k, us] of top) md += `| ${(us / 1000).toFixed(1)} | ${k} |\n`;
md += '\n| inclusive samples (of ' + sampled + ') | function |\n|---:|---|\n';
const watch = [
  'emit',
  'readRaw',
  'fetchStacks',
  'symbolize',
  'buildAgentProfile',
  'encode',
  'userStackFromBytes',
  'kernelStackFromBytes',
  'revalidate',
  'readMapsText',
  'parseMaps',
  'loadElf',
  'drain',
  'mappedBuildId',
  'fileBuildId',
  'expireStacks',
  'dropUnusedFiles',
  'gzip',
  'garbage collector',
  '(garbage collector)',
  '(idle)',
  '(program)',
];
for (const w of watch) if (total.has(w)) md += `| ${total.get(w)} | ${w} |\n`;
md += `\nresolver stats: ${JSON.stringify(profiler.resolverStats)}; stack hits/misses ${profiler.stackHits}/${profiler.stackMisses}\n`;
md += `ELF tables loaded while profiling (file: loads, ms): ${[...elfLoads]
  .sort((a, b) => b[1].ms - a[1].ms)
  .map(([f, e]) => `${f}: ${e.n}, ${e.ms.toFixed(0)}`)
  .join('; ')}\n`;
md += `memory: ${JSON.stringify(Object.fromEntries(Object.entries(process.memoryUsage()).map(([k, v]) => [k, +(v / 2 ** 20).toFixed(1)])))} MB\n`;

if (argv.includes('--heap')) {
  const file = writeHeapSnapshot(join(tmpdir(), `agent-${process.pid}.heapsnapshot`));
  const snap = JSON.parse(readFileSync(file, 'utf8'));
  rmSync(file);
  const m = snap.snapshot.meta;
  const nf = m.node_fields.length;
  const types = m.node_types[0];
  const ti = m.node_fields.indexOf('type');
  const ni = m.node_fields.indexOf('name');
  const si = m.node_fields.indexOf('self_size');
  const agg = new Map();
  for (let i = 0; i < snap.nodes.length; i += nf) {
    const type = types[snap.nodes[i + ti]];
    const name = type === 'object' || type === 'native' ? snap.strings[snap.nodes[i + ni]] : `(${type})`;
    const a = agg.get(name) ?? { n: 0, size: 0 };
    a.n++;
    a.size += snap.nodes[i + si];
    agg.set(name, a);
  }
  md += '\n| heap self MB | count | constructor / type |\n|---:|---:|---|\n';
  for (const [k, a] of [...agg].sort((x, y) => y[1].size - x[1].size).slice(0, 25))
    md += `| ${(a.size / 2 ** 20).toFixed(2)} | ${a.n} | ${k.slice(0, 80)} |\n`;
}
process.stdout.write(md);
process.emit('SIGINT');
await done;
sink.close();
session.disconnect();
process.exit(0);
