#!/usr/bin/env node
/**
 * Is a long-running tool's memory drift retained JS objects or garbage-collector slack? (issue 19, soak item 5.)
 * Runs execsnoop, biolatency 1 and the soak's one-liner (bench/reliability/soak.mjs) (or the `--tools` named), each
 * with a `--require` preload (nothing in the tool's code) that, every `--every` s, forces a full GC (`--expose-gc` set
 * at run time; not with `--no-gc`, which samples the process as the soak sees it) and appends to DIR/heap-NAME.jsonl:
 * - `process.memoryUsage()` (bytes: rss, heapTotal, heapUsed, external, arrayBuffers);
 * - `spaces`: V8's heap spaces' physical size (bytes, `v8.getHeapSpaceStatistics()`: new, old, code, large_object...);
 * - `malloc`: glibc's `mallinfo2()` (bytes: `arena` = obtained from the system by brk and the arenas, `inUse` =
 *   uordblks, allocated; `free` = fordblks, free inside them; `mmapped` = hblkhd, large blocks mapped on their own),
 *   called through the project's koffi;
 * - `smaps`: the Rss of the process's mappings by kind (kB): `heap` = `[heap]`, glibc's main arena; `arena` = the
 *   other glibc arenas (anonymous mappings at a 64 MiB boundary, at most 64 MiB); `v8page` = anonymous 256 KiB
 *   mappings (V8 heap pages); `anon` = other anonymous mappings; `node` = the node binary; `file` = other files;
 *   `other` = the rest (stack, vdso);
 * - `status`: RssAnon and RssFile (kB, /proc/self/status).
 * At `--snap` seconds (default 120 and 600; `--snap none`: never) it writes a heap snapshot after a forced GC to
 * DIR/NAME-T.heapsnapshot (compare them with bench/reliability/heap-diff.mjs; a snapshot leaves ~40-50 MB of glibc
 * heap resident, so use `--snap none` when the RSS matters). The load is the soak's
 * (bench/reliability/mixed-load.mjs) unless `--no-load` (e.g. when a soak already runs it on the same machine: the
 * tools trace the whole machine); `--storm N` adds an exec storm: N execs of /bin/true with 21 arguments of 120
 * bytes (execsnoop's longest lines) per tenth of a second, as fast as the machine allows.
 *
 * `--external`: no preload, nothing allocated in the process for the watch (the preload's own reads of smaps are
 * garbage that the tool's heap then holds until a full GC): the parent samples /proc/PID/status and /proc/PID/smaps
 * (`rss`, `status`, `smaps` as above), and the tool runs under node's `--trace-gc`, whose mark-compact lines (time,
 * JS heap before -> after in MB) go to DIR/gc-NAME.json. `--render DIR` then draws DIR's run of the first `--tools`
 * tool (RSS, RssAnon, the mark-compacts; title from DIR/about.txt) into `--svg FILE`
 * (default docs/pictures/reliability/execsnoop-drift.svg).
 *
 *   sudo node bench/reliability/heap-watch.mjs [--minutes 10] [--every 10] [--snap 120,600|none] [--out DIR]
 *       [--no-load] [--no-gc] [--storm N] [--tools execsnoop,biolatency,one-liner] [--external]
 *   node bench/reliability/heap-watch.mjs --render DIR [--tools execsnoop] [--svg FILE]
 *
 * Prints per tool the least-squares slope (kB/min, second half) of RSS and each part above. Needs a build.
 */
import { spawn } from 'node:child_process';
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  createWriteStream,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createRequire } from 'node:module';
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
    'no-gc': { type: 'boolean', default: false },
    storm: { type: 'string', default: '0' },
    tools: { type: 'string', default: 'execsnoop,biolatency,one-liner' },
    external: { type: 'boolean', default: false },
    render: { type: 'string' },
    svg: { type: 'string', default: join(ROOT, 'docs', 'pictures', 'reliability', 'execsnoop-drift.svg') },
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

/**
 * The Rss of a process's mappings by kind, in kB, from the text of /proc/PID/smaps (see the module comment; also
 * put into the preload as source, so it must not use anything outside itself).
 */
function smapsByKind(text, execPath) {
  const k = { heap: 0, arena: 0, v8page: 0, anon: 0, node: 0, file: 0, other: 0 };
  let kind = 'other';
  for (const line of text.split('\n')) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (m) {
      const lo = BigInt('0x' + m[1]);
      const size = BigInt('0x' + m[2]) - lo;
      const path = m[3];
      if (path === '[heap]') kind = 'heap';
      else if (path === '' && lo % 0x4000000n === 0n && size <= 0x4000000n) kind = 'arena';
      else if (path === '' && size === 0x40000n) kind = 'v8page';
      else if (path === '') kind = 'anon';
      else if (path === execPath || path.endsWith('/node')) kind = 'node';
      else kind = path.startsWith('/') ? 'file' : 'other';
    }
    const r = /^Rss:\s+(\d+) kB/.exec(line);
    if (r) k[kind] += Number(r[1]);
  }
  return k;
}

const PRELOAD = (file, snapDir, name, everyS, snaps, forceGc, koffiPath) => `
const { appendFileSync, readFileSync } = require('node:fs');
const v8 = require('node:v8');
const vm = require('node:vm');
const forceGc = ${forceGc};
let gc = () => {};
if (forceGc) {
  v8.setFlagsFromString('--expose-gc');
  gc = vm.runInNewContext('gc');
}
let mallinfo2 = () => null;
try {
  const koffi = require(${JSON.stringify(koffiPath)});
  const MI = koffi.struct('heapwatch_mallinfo2', {
    arena: 'size_t', ordblks: 'size_t', smblks: 'size_t', hblks: 'size_t', hblkhd: 'size_t',
    usmblks: 'size_t', fsmblks: 'size_t', uordblks: 'size_t', fordblks: 'size_t', keepcost: 'size_t',
  });
  const f = koffi.load('libc.so.6').func('mallinfo2', MI, []);
  mallinfo2 = () => {
    const m = f();
    return { arena: m.arena, inUse: m.uordblks, free: m.fordblks, mmapped: m.hblkhd };
  };
} catch {}
${smapsByKind.toString()}
function status() {
  const s = readFileSync('/proc/self/status', 'latin1');
  const kb = (n) => Number((new RegExp(n + ':\\\\s+(\\\\d+)').exec(s) ?? [])[1]);
  return { rssAnon: kb('RssAnon'), rssFile: kb('RssFile') };
}
const t0 = Date.now();
const snaps = ${JSON.stringify(snaps)};
setInterval(() => {
  gc();
  const t = Math.round((Date.now() - t0) / 1000);
  const spaces = {};
  for (const x of v8.getHeapSpaceStatistics()) spaces[x.space_name.replace(/_space$/, '')] = x.physical_space_size;
  const row = { t, ...process.memoryUsage(), spaces, malloc: mallinfo2(), smaps: smapsByKind(readFileSync('/proc/self/smaps', 'latin1'), process.execPath), status: status() };
  appendFileSync(${JSON.stringify(file)}, JSON.stringify(row) + '\\n');
  while (snaps.length && t >= snaps[0]) {
    gc();
    v8.writeHeapSnapshot(${JSON.stringify(snapDir)} + '/' + ${JSON.stringify(name)} + '-' + snaps.shift() + '.heapsnapshot');
  }
}, ${everyS * 1000}).unref();
`;

/** `--storm N`: N execs of /bin/true with 21 arguments of 120 bytes, then a tenth of a second's pause, forever. */
const STORM_SH = (n) => `
a=$(printf '%0120d' 0)
while :; do
  i=0
  while [ $i -lt ${n} ]; do /bin/true $a $a $a $a $a $a $a $a $a $a $a $a $a $a $a $a $a $a $a $a $a; i=$((i+1)); done
  sleep 0.1
done
`;

/** One line of node's --trace-gc: `[PID:0xISOLATE]  T ms: KIND A (B) -> C (D) MB, ...` (heap used (committed)). */
const GC_LINE =
  /^\[\d+:0x[0-9a-f]+\]\s+(\d+) ms: (Scavenge|Mark-Compact|Minor Mark-Sweep)(?: \(reduce\))? ([\d.]+) \(([\d.]+)\) -> ([\d.]+) \(([\d.]+)\) MB/;

async function main() {
  const out = opts.out;
  mkdirSync(out, { recursive: true });
  const base = join(tmpdir(), `bpfscope-heapwatch-${process.pid}`);
  rmSync(base, { recursive: true, force: true });
  mkdirSync(base, { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(base, 'node_modules'));
  cpSync(join(ROOT, 'dist'), join(base, 'dist'), { recursive: true });
  const cli = join(base, 'dist', 'bundle', 'bpfscope.cjs');
  const snaps = opts.snap === 'none' ? [] : opts.snap.split(',').map(Number);
  const want = opts.tools.split(',');
  const unknown = want.filter((n) => !TOOLS.some((t) => t.name === n));
  if (unknown.length) throw new Error(`heap-watch: unknown tool ${unknown.join(', ')} (${TOOLS.map((t) => t.name)})`);
  const koffiPath = createRequire(join(ROOT, 'package.json')).resolve('koffi');
  const external = opts.external;
  const procs = TOOLS.filter((t) => want.includes(t.name)).map((t) => {
    const jsonl = join(out, `heap-${t.name}.jsonl`);
    writeFileSync(jsonl, '');
    const pre = join(base, `preload-${t.name}.cjs`);
    writeFileSync(pre, PRELOAD(jsonl, out, t.name, Number(opts.every), [...snaps], !opts['no-gc'], koffiPath));
    // node --require PRELOAD bundle: the bundle's sh prelude (which drops NODE_* variables) is not in the way.
    const env = { ...process.env };
    delete env.NODE_EXTRA_CA_CERTS;
    delete env.NODE_OPTIONS;
    const nodeArgs = external ? ['--trace-gc'] : ['--require', pre];
    const child = spawn(process.execPath, [...nodeArgs, cli, ...t.args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const p = { ...t, child, jsonl, gcs: [] };
    const outFile = createWriteStream(join(out, `${t.name}.out`));
    if (external) {
      // --trace-gc's lines share stdout with the tool's: keep the mark-compacts (time, heap before -> after)
      let rest = '';
      child.stdout.on('data', (d) => {
        outFile.write(d);
        const lines = (rest + d.toString('latin1')).split('\n');
        rest = lines.pop();
        for (const line of lines) {
          const m = GC_LINE.exec(line);
          if (m && m[2].startsWith('Mark-Compact')) {
            p.gcs.push({
              t: Math.round(Number(m[1]) / 1000),
              kind: m[2],
              beforeMb: Number(m[3]),
              afterMb: Number(m[5]),
            });
          }
        }
      });
    } else {
      child.stdout.pipe(outFile);
    }
    child.stderr.pipe(createWriteStream(join(out, `${t.name}.err`)));
    return p;
  });
  // --external: the parent samples each process's /proc files, so nothing in the process allocates for the watch
  const t0 = Date.now();
  const sampler = external
    ? setInterval(
        () => {
          for (const p of procs) {
            try {
              const st = readFileSync(`/proc/${p.child.pid}/status`, 'latin1');
              const kb = (n) => Number((new RegExp(`${n}:\\s+(\\d+)`).exec(st) ?? [])[1]);
              const smaps = smapsByKind(readFileSync(`/proc/${p.child.pid}/smaps`, 'latin1'), process.execPath);
              const row = { t: Math.round((Date.now() - t0) / 1000), rss: kb('VmRSS') * 1024, smaps };
              row.status = { rssAnon: kb('RssAnon'), rssFile: kb('RssFile') };
              appendFileSync(p.jsonl, JSON.stringify(row) + '\n');
            } catch {
              /* gone */
            }
          }
        },
        Number(opts.every) * 1000,
      )
    : null;
  const loads = [];
  if (!opts['no-load']) loads.push(spawn('sh', ['-c', LOAD_SH(base)], { stdio: 'ignore', detached: true }));
  if (Number(opts.storm) > 0) {
    loads.push(
      spawn('nice', ['-n', '10', 'sh', '-c', STORM_SH(Number(opts.storm))], { stdio: 'ignore', detached: true }),
    );
  }
  await sleep(Number(opts.minutes) * 60_000);
  for (const l of loads) process.kill(-l.pid, 'SIGKILL');
  if (sampler) clearInterval(sampler);
  for (const p of procs) p.child.kill('SIGINT');
  await sleep(3000);
  for (const p of procs)
    if (external) writeFileSync(join(out, `gc-${p.name}.json`), JSON.stringify(p.gcs, null, 1) + '\n');
  rmSync(base, { recursive: true, force: true });
  for (const p of procs) {
    const rows = readFileSync(p.jsonl, 'utf8').trim().split('\n').filter(Boolean).map(JSON.parse);
    const half = rows.filter((r) => r.t >= rows.at(-1).t / 2);
    const xs = half.map((r) => r.t / 60);
    /** Slope (kB/min, second half) of the value `get` gives in bytes. */
    const f = (get) =>
      Math.round(
        slope(
          xs,
          half.map((r) => get(r) / 1024),
        ) ?? NaN,
      );
    const mb = (v) => (v / 1048576).toFixed(1);
    const [a, z] = [rows[0], rows.at(-1)];
    const part = (label, get) => `${label} ${mb(get(a))} -> ${mb(get(z))} MB (${f(get)} kB/min)`;
    const lines = [part('rss', (r) => r.rss)];
    if (external) {
      lines.push(...Object.keys(z.smaps).map((k) => part(`smaps ${k}`, (r) => r.smaps[k] * 1024)));
      lines.push(
        `mark-compacts: ${p.gcs.map((g) => `${g.t} s ${g.beforeMb} -> ${g.afterMb} MB`).join(', ') || 'none'}`,
      );
      console.log(
        `${p.name}: ${rows.length} samples, ${a.t}-${z.t} s; slopes over the second half\n  ${lines.join('\n  ')}`,
      );
      continue;
    }
    lines.push(
      part(opts['no-gc'] ? 'heapUsed' : 'heapUsed after GC', (r) => r.heapUsed),
      part('external', (r) => r.external),
      ...Object.keys(z.spaces)
        .filter((k) => z.spaces[k] > 0 || a.spaces[k] > 0)
        .map((k) => part(`V8 ${k}`, (r) => r.spaces[k] ?? 0)),
      ...(z.malloc ? ['arena', 'inUse', 'free', 'mmapped'].map((k) => part(`malloc ${k}`, (r) => r.malloc[k])) : []),
      ...Object.keys(z.smaps).map((k) => part(`smaps ${k}`, (r) => r.smaps[k] * 1024)),
    );
    console.log(
      `${p.name}: ${rows.length} samples, ${a.t}-${z.t} s; slopes over the second half\n  ${lines.join('\n  ')}`,
    );
  }
}
/**
 * An SVG of an `--external` run of one tool: RSS and anonymous RSS (MB) over minutes, one line each, with a vertical
 * mark at each mark-compact and its heap before -> after (MB, from --trace-gc).
 */
function driftSvg(name, rows, gcs, title) {
  const W = 900;
  const PH = 300;
  const M = { l: 64, r: 20, t: 70, b: 40 };
  const esc = (x) => String(x).replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const tMax = Math.max(1, ...rows.map((r) => r.t / 60));
  const lines = [
    { label: 'VmRSS', color: '#1f77b4', get: (r) => r.rss / 1048576 },
    { label: 'RssAnon (heap, arenas, V8 pages)', color: '#d62728', get: (r) => r.status.rssAnon / 1024 },
  ];
  const yMax = Math.ceil((Math.max(...rows.flatMap((r) => lines.map((l) => l.get(r)))) * 1.1) / 10) * 10;
  const x = (t) => M.l + (t / tMax) * (W - M.l - M.r);
  const y = (v) => M.t + PH - (v / yMax) * PH;
  const parts = [];
  for (let i = 0; i <= 5; i++) {
    const v = (yMax * i) / 5;
    parts.push(`<line x1="${M.l}" x2="${W - M.r}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`);
    parts.push(`<text x="${M.l - 6}" y="${y(v) + 4}" font-size="11" text-anchor="end">${+v.toFixed(1)} MB</text>`);
  }
  const step = tMax > 20 ? 5 : tMax > 5 ? 1 : 0.5;
  for (let t = 0; t <= tMax + 1e-9; t += step) {
    parts.push(`<text x="${x(t)}" y="${M.t + PH + 16}" font-size="11" text-anchor="middle">${t} min</text>`);
  }
  for (const g of gcs) {
    const gx = x(g.t / 60).toFixed(1);
    parts.push(`<line x1="${gx}" x2="${gx}" y1="${M.t}" y2="${M.t + PH}" stroke="#2ca02c" stroke-dasharray="4 3"/>`);
    parts.push(
      `<text x="${gx}" y="${M.t - 4}" font-size="10" text-anchor="middle" fill="#2ca02c">${g.beforeMb}→${g.afterMb}</text>`,
    );
  }
  for (const l of lines) {
    const pts = rows.map((r) => `${x(r.t / 60).toFixed(1)},${y(l.get(r)).toFixed(1)}`).join(' ');
    parts.push(`<polyline fill="none" stroke="${l.color}" stroke-width="1.5" points="${pts}"/>`);
  }
  parts.push(`<rect x="${M.l}" y="${M.t}" width="${W - M.l - M.r}" height="${PH}" fill="none" stroke="#888"/>`);
  const ly = M.t + PH + 40;
  const legend = [
    ...lines.map((l) => [l.color, l.label]),
    ['#2ca02c', 'mark-compact GC (--trace-gc): JS heap before → after, MB'],
  ]
    .map(
      ([c, t], i) =>
        `<g transform="translate(${M.l},${ly + i * 18})"><rect width="14" height="4" y="-5" fill="${c}"/>` +
        `<text x="20" font-size="12">${esc(t)}</text></g>`,
    )
    .join('');
  const H = ly + 18 * 3 + 10;
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif">` +
    `<rect width="100%" height="100%" fill="white"/>` +
    `<text x="${M.l}" y="24" font-size="16" font-weight="bold">${esc(`${name}: ${title}`)}</text>` +
    parts.join('') +
    legend +
    '</svg>\n'
  );
}

if (opts.render) {
  // --render DIR: the SVG of DIR's --external run of the first --tools tool (the title from DIR/about.txt if any)
  const name = opts.tools.split(',')[0];
  const rows = readFileSync(join(opts.render, `heap-${name}.jsonl`), 'utf8')
    .trim()
    .split('\n')
    .map(JSON.parse);
  const gcs = JSON.parse(readFileSync(join(opts.render, `gc-${name}.json`), 'utf8'));
  const about = existsSync(join(opts.render, 'about.txt'))
    ? readFileSync(join(opts.render, 'about.txt'), 'utf8').trim()
    : '';
  mkdirSync(dirname(opts.svg), { recursive: true });
  writeFileSync(opts.svg, driftSvg(name, rows, gcs, about || 'RSS and mark-compacts'));
  console.log(`wrote ${opts.svg}`);
} else {
  await main();
}
