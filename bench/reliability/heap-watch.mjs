#!/usr/bin/env node
/**
 * Is a long-running tool's memory drift retained JS objects or garbage-collector slack? (issue 19, soak item 5.)
 * Runs execsnoop, biolatency 1 and the soak's one-liner (bench/reliability/soak.mjs), each with a `--require`
 * preload (nothing in the tool's code) that, every `--every` s, forces a full GC (`--expose-gc` set at run time) and
 * appends process.memoryUsage() (bytes: rss, heapTotal, heapUsed, external, arrayBuffers) and the Rss of the
 * process's mappings by kind (kB: `[heap]` = glibc's main heap, anonymous, file-backed, other) to DIR/heap-NAME.jsonl, and
 * writes a heap snapshot after a forced GC at `--snap` seconds (default 120 and 600) to DIR/NAME-T.heapsnapshot
 * (compare them with bench/reliability/heap-diff.mjs). The load is the soak's (bench/reliability/mixed-load.mjs)
 * unless `--no-load` (e.g. when a soak already runs it on the same machine: the tools trace the whole machine).
 *
 *   sudo node bench/reliability/heap-watch.mjs [--minutes 10] [--every 10] [--snap 120,600] [--out DIR] [--no-load]
 *
 * Prints per tool the least-squares slope (kB/min, second half) of heapUsed after GC and of RSS. Needs a build.
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync, createWriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { sleep } from '../lib/proc.mjs';
import { LOAD_SH } from './mixed-load.mjs';
import { slope } from '../lib/stats.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = dirname(dirname(HERE));
const { values: opts } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    every: { type: 'string', default: '10' },
    snap: { type: 'string', default: '120,600' },
    out: { type: 'string', default: join(tmpdir(), 'heap-watch') },
    'no-load': { type: 'boolean', default: false },
  },
});

const ONE_LINER =
  'tracepoint:raw_syscalls:sys_enter { @syscalls[comm] = count(); } ' +
  'tracepoint:syscalls:sys_enter_read { @read_bytes = hist(args.count); } ' +
  'interval:s:10 { print(@syscalls); print(@read_bytes); clear(@syscalls); clear(@read_bytes); }';
const TOOLS = [
  { name: 'execsnoop', args: ['execsnoop'] },
  { name: 'biolatency', args: ['biolatency', '1'] },
  { name: 'one-liner', args: ['-e', ONE_LINER] },
];

const PRELOAD = (file, snapDir, name, everyS, snaps) => `
const { appendFileSync } = require('node:fs');
const v8 = require('node:v8');
const vm = require('node:vm');
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');
function smapsByKind() {
  const k = { heap: 0, anon: 0, file: 0, other: 0 };
  let kind = 'other';
  for (const line of require('node:fs').readFileSync('/proc/self/smaps', 'latin1').split('\\n')) {
    const m = /^[0-9a-f]+-[0-9a-f]+ \\S+ \\S+ \\S+ \\d+\\s*(.*)$/.exec(line);
    if (m) kind = m[1] === '[heap]' ? 'heap' : m[1] === '' ? 'anon' : m[1].startsWith('/') ? 'file' : 'other';
    const r = /^Rss:\\s+(\\d+) kB/.exec(line);
    if (r) k[kind] += Number(r[1]);
  }
  return k;
}
const t0 = Date.now();
const snaps = ${JSON.stringify(snaps)};
setInterval(() => {
  gc();
  const t = Math.round((Date.now() - t0) / 1000);
  appendFileSync(${JSON.stringify(file)}, JSON.stringify({ t, ...process.memoryUsage(), smaps: smapsByKind() }) + '\\n');
  while (snaps.length && t >= snaps[0]) {
    v8.writeHeapSnapshot(${JSON.stringify(snapDir)} + '/' + ${JSON.stringify(name)} + '-' + snaps.shift() + '.heapsnapshot');
  }
}, ${everyS * 1000}).unref();
`;

async function main() {
  const out = opts.out;
  mkdirSync(out, { recursive: true });
  const base = join(tmpdir(), `bpfscope-heapwatch-${process.pid}`);
  rmSync(base, { recursive: true, force: true });
  mkdirSync(base, { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(base, 'node_modules'));
  cpSync(join(ROOT, 'dist'), join(base, 'dist'), { recursive: true });
  const cli = join(base, 'dist', 'bundle', 'bpfscope.cjs');
  const snaps = opts.snap.split(',').map(Number);
  const procs = TOOLS.map((t) => {
    const jsonl = join(out, `heap-${t.name}.jsonl`);
    writeFileSync(jsonl, '');
    const pre = join(base, `preload-${t.name}.cjs`);
    writeFileSync(pre, PRELOAD(jsonl, out, t.name, Number(opts.every), snaps));
    // node --require PRELOAD bundle: the bundle's sh prelude (which drops NODE_* variables) is not in the way.
    const env = { ...process.env };
    delete env.NODE_EXTRA_CA_CERTS;
    delete env.NODE_OPTIONS;
    const child = spawn(process.execPath, ['--require', pre, cli, ...t.args], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.pipe(createWriteStream(join(out, `${t.name}.out`)));
    child.stderr.pipe(createWriteStream(join(out, `${t.name}.err`)));
    return { ...t, child, jsonl };
  });
  const load = opts['no-load'] ? null : spawn('sh', ['-c', LOAD_SH(base)], { stdio: 'ignore', detached: true });
  await sleep(Number(opts.minutes) * 60_000);
  if (load) process.kill(-load.pid, 'SIGKILL');
  for (const p of procs) p.child.kill('SIGINT');
  await sleep(3000);
  rmSync(base, { recursive: true, force: true });
  for (const p of procs) {
    const rows = readFileSync(p.jsonl, 'utf8').trim().split('\n').filter(Boolean).map(JSON.parse);
    const half = rows.filter((r) => r.t >= rows.at(-1).t / 2);
    const xs = half.map((r) => r.t / 60);
    const f = (k) =>
      Math.round(
        slope(
          xs,
          half.map((r) => r[k] / 1024),
        ) ?? NaN,
      );
    const mb = (v) => (v / 1048576).toFixed(1);
    console.log(
      `${p.name}: ${rows.length} samples; heapUsed after GC ${mb(rows[0].heapUsed)} -> ${mb(rows.at(-1).heapUsed)} MB ` +
        `(${f('heapUsed')} kB/min 2nd half), external ${mb(rows[0].external)} -> ${mb(rows.at(-1).external)} MB ` +
        `(${f('external')}), rss ${mb(rows[0].rss)} -> ${mb(rows.at(-1).rss)} MB (${f('rss')}); smaps first ` +
        `${JSON.stringify(rows[0].smaps)} last ${JSON.stringify(rows.at(-1).smaps)}`,
    );
  }
}
await main();
