#!/usr/bin/env node
/**
 * DWARF type lookup on a large binary (issue 18, "DWARF module" acceptance): a generated C program with N functions
 * and N struct types (default 10000 each, in 20 compilation units, `gcc -g -O0`), then
 *   - readelf:      wall time of `readelf --debug-dump=info FILE > /dev/null` (binutils), the reference;
 *   - first lookup: openDwarf(FILE) + the first function lookup + the first struct lookup, in a fresh Node process
 *                   (module loading not counted): the name index is built here, one pass over .debug_info;
 *   - later lookups: a function and a struct type per lookup, all different names (index hits, each built once);
 *   - cached:       the same lookups again (answered from the caches).
 * Target: first lookup at most 2x readelf. Medians of --rounds runs (default 5). Not a test. Writes
 * bench/results/dwarf.json and bench/results/dwarf.md. Needs gcc, binutils and a build (`npm run build`).
 *
 *   node bench/dwarf/run.mjs [--n 10000] [--rounds 5]
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { RESULTS_DIR, ROOT } from '../lib/env.mjs';

const argv = process.argv.slice(2);
const opt = (name, dflt) => (argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : dflt);
const N = opt('--n', 10000);
const ROUNDS = opt('--rounds', 5);
const UNITS = 20;
const log = (s) => process.stderr.write(`${s}\n`);

/** One compilation unit: N/UNITS structs `struct sN` with a pointer, an array and a nested struct, and functions. */
function unitSource(u) {
  const per = N / UNITS;
  const lines = ['#include <stddef.h>', 'struct inner { int a; long b; };'];
  for (let i = u * per; i < (u + 1) * per; i++) {
    lines.push(
      `struct s${i} { int id; char name[${(i % 13) + 1}]; struct inner in; struct s${i} *next; unsigned flags : ${(i % 7) + 1}; double w; };`,
      `typedef struct s${i} s${i}_t;`,
      `__attribute__((noinline)) long fn${i}(s${i}_t *p, int k, const char *tag) { return p->id + k + (tag != NULL) + p->in.b; }`,
    );
  }
  lines.push(`long unit${u}(void) { long t = 0; struct s${u * per} s = {0};`);
  lines.push(`  t += fn${u * per}(&s, 1, "x");`);
  lines.push('  return t; }');
  return lines.join('\n') + '\n';
}

function build() {
  const main = ['long unit0(void);'];
  for (let u = 1; u < UNITS; u++) main.push(`long unit${u}(void);`);
  main.push('int main(void) { long t = 0;');
  for (let u = 0; u < UNITS; u++) main.push(`  t += unit${u}();`);
  main.push('  return (int)(t & 1); }');
  const sources = [...Array.from({ length: UNITS }, (_, u) => unitSource(u)), main.join('\n') + '\n'];
  const hash = createHash('sha256').update(sources.join('\0')).digest('hex').slice(0, 12);
  const dir = join(tmpdir(), `bpfscope-bench-dwarf-${hash}`);
  const bin = join(dir, 'big');
  if (existsSync(bin)) return bin;
  mkdirSync(dir, { recursive: true });
  const files = sources.map((s, i) => {
    const f = join(dir, `u${i}.c`);
    writeFileSync(f, s);
    return f;
  });
  log(`building ${N} functions and ${N} structs in ${UNITS} units (gcc -g -O0) ...`);
  execFileSync('gcc', ['-g', '-O0', '-o', `${bin}.tmp`, ...files], { stdio: 'inherit' });
  renameSync(`${bin}.tmp`, bin);
  return bin;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** readelf's wall time, and its CPU time (user + system) through GNU time when /usr/bin/time exists. */
function timeReadelf(bin) {
  const haveTime = existsSync('/usr/bin/time');
  const cmd = haveTime ? '/usr/bin/time' : 'readelf';
  const args = haveTime ? ['-f', '%U %S', 'readelf', '--debug-dump=info', bin] : ['--debug-dump=info', bin];
  const t0 = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`readelf failed with status ${r.status}: ${r.stderr}`);
  const cpu = haveTime ? r.stderr.trim().split('\n').pop().split(' ').map(Number) : [NaN, NaN];
  return { ms, cpuMs: (cpu[0] + cpu[1]) * 1000 };
}

/** The lookups, in a child process: prints one JSON line. */
const CHILD = `
const [, index, bin, n] = process.argv;
const { openDwarf } = await import(index);
const N = Number(n);
const now = () => Number(process.hrtime.bigint()) / 1e6;
const cpu = (c) => (c.user + c.system) / 1000;
const t0 = now();
const c0 = process.cpuUsage();
const d = openDwarf(bin);
const f = d.function('fn' + (N - 1));
const t = d.type('struct s' + (N - 1));
const firstCpu = cpu(process.cpuUsage(c0));
const first = now() - t0;
if (f.params.length !== 3 || t.kind !== 'struct' || t.members.length !== 6) throw new Error('wrong answer');
const names = Array.from({ length: 2000 }, (_, i) => (i * 7919) % (N - 1));
const t1 = now();
const c1 = process.cpuUsage();
for (const i of names) { d.function('fn' + i); d.type('struct s' + i); }
const laterCpu = cpu(process.cpuUsage(c1)) / names.length;
const later = (now() - t1) / names.length;
const t2 = now();
for (const i of names) { d.function('fn' + i); d.type('struct s' + i); }
const cached = (now() - t2) / names.length;
const mem = process.memoryUsage().rss / 2 ** 20;
d.close();
process.stdout.write(JSON.stringify({ first, firstCpu, later, laterCpu, cached, rssMiB: mem }) + '\\n');
`;

function timeOurs(bin) {
  const index = pathToFileURL(join(ROOT, 'dist', 'src', 'symbols', 'dwarf', 'index.js')).href;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', CHILD, '--', index, bin, String(N)], {
    encoding: 'utf8',
  });
  return JSON.parse(out.trim().split('\n').pop());
}

if (!existsSync(join(ROOT, 'dist', 'src', 'symbols', 'dwarf', 'index.js'))) {
  log('build first: npm run build');
  process.exit(1);
}
const bin = build();
// readelf -SW: [Nr] Name Type Address Off Size ...
const infoLine = execFileSync('readelf', ['-SW', bin], { encoding: 'utf8' })
  .split('\n')
  .find((l) => / \.debug_info /.test(l));
const infoSize = Number.parseInt(/\.debug_info\s+\S+\s+\S+\s+\S+\s+(\S+)/.exec(infoLine)[1], 16);
const readelf = [];
const ours = [];
for (let r = 0; r < ROUNDS; r++) {
  readelf.push(timeReadelf(bin));
  ours.push(timeOurs(bin));
  log(
    `round ${r + 1}: readelf ${readelf[r].ms.toFixed(1)} ms (CPU ${readelf[r].cpuMs.toFixed(0)} ms), ` +
      `first lookup ${ours[r].first.toFixed(1)} ms (CPU ${ours[r].firstCpu.toFixed(0)} ms)`,
  );
}
const res = {
  date: new Date().toISOString(),
  commit: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim(),
  machine: `${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), load ${loadavg()[0].toFixed(2)} at the end, node ${process.version}`,
  binary: { functions: N, structs: N, units: UNITS + 1, bytes: statSync(bin).size, debugInfoBytes: infoSize },
  rounds: ROUNDS,
  readelfMs: median(readelf.map((r) => r.ms)),
  readelfCpuMs: median(readelf.map((r) => r.cpuMs)),
  firstLookupMs: median(ours.map((o) => o.first)),
  firstLookupCpuMs: median(ours.map((o) => o.firstCpu)),
  laterLookupUs: median(ours.map((o) => o.later * 1000)),
  laterLookupCpuUs: median(ours.map((o) => o.laterCpu * 1000)),
  cachedLookupUs: median(ours.map((o) => o.cached * 1000)),
  rssMiB: median(ours.map((o) => o.rssMiB)),
};
res.ratio = res.firstLookupMs / res.readelfMs;
res.cpuRatio = res.firstLookupCpuMs / res.readelfCpuMs;
mkdirSync(RESULTS_DIR, { recursive: true });
writeFileSync(join(RESULTS_DIR, 'dwarf.json'), `${JSON.stringify(res, null, 2)}\n`);
const md = `# DWARF lookup benchmark (bench/dwarf/run.mjs)

${res.date}, commit ${res.commit}; ${res.machine}.
Binary: ${N} functions and ${N} struct types (+ a typedef each) in ${res.binary.units} units, gcc -g -O0,
${(res.binary.bytes / 2 ** 20).toFixed(1)} MiB, .debug_info ${(res.binary.debugInfoBytes / 2 ** 20).toFixed(1)} MiB. Medians of ${ROUNDS} rounds.

| measure | wall | CPU (user + system) |
|---|---:|---:|
| \`readelf --debug-dump=info\` > /dev/null | ${res.readelfMs.toFixed(1)} ms | ${res.readelfCpuMs.toFixed(0)} ms |
| first lookup (open + index + one function + one struct) | ${res.firstLookupMs.toFixed(1)} ms | ${res.firstLookupCpuMs.toFixed(0)} ms |
| first lookup / readelf (target ≤ 2) | ${res.ratio.toFixed(2)} | ${res.cpuRatio.toFixed(2)} |
| later lookup (a new function + a new struct; 2000 of them, JIT warm-up included) | ${res.laterLookupUs.toFixed(1)} µs | ${res.laterLookupCpuUs.toFixed(1)} µs |
| cached lookup (the same again) | ${res.cachedLookupUs.toFixed(2)} µs | |
| RSS of the lookup process | ${res.rssMiB.toFixed(0)} MiB | |

The machine is shared (see the load above): wall times vary with it, CPU times much less.
`;
writeFileSync(join(RESULTS_DIR, 'dwarf.md'), md);
process.stdout.write(md);
