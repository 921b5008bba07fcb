#!/usr/bin/env node
/**
 * Where `bpfscope profile`'s memory goes over a long run (issue 19): runs `profile -F 49` (the soak's arguments) under
 * the soak's load and, every `--every` s, samples from outside /proc/PID/smaps (Rss in kB summed per kind of mapping:
 * `[heap]` = the main glibc heap (brk), `arena` = anonymous 64 MiB-reserved regions of glibc's per-thread malloc
 * arenas (a 1-64 MiB rw mapping next to its ---p remainder), `anon` = other anonymous mappings (V8's pages, array
 * buffers, mmapped malloc chunks of >= 128 KiB), `file` = file-backed mappings, `stack`, the thread count) and from
 * inside (a `--require` preload in the tool's process, nothing in the tool's code) process.memoryUsage() (bytes:
 * rss, heapTotal, heapUsed, external, arrayBuffers) and V8's heap-space sizes.
 *
 *   sudo node bench/reliability/profile-memory.mjs [--minutes 12] [--every 10] [--out DIR] [--cli PATH]
 *
 * Output: DIR/profile-memory.json (every sample) and one line per sample on stderr. Needs `npm run build` first.
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { sleep } from '../lib/proc.mjs';
import { LOAD_SH } from './mixed-load.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = dirname(dirname(HERE));
const { values: opts } = parseArgs({
  options: {
    minutes: { type: 'string', default: '12' },
    every: { type: 'string', default: '10' },
    out: { type: 'string', default: join(HERE, 'results') },
    cli: { type: 'string' },
    args: { type: 'string', default: 'profile -F 49' },
  },
});

/** Rss (kB) of a process's mappings by kind, from /proc/PID/smaps; null when it is gone. */
export function smapsByKind(pid) {
  let text;
  try {
    text = readFileSync(`/proc/${pid}/smaps`, 'latin1');
  } catch {
    return null;
  }
  const kinds = { heap: 0, arena: 0, anon: 0, file: 0, stack: 0, other: 0 };
  const maps = [];
  let cur = null;
  for (const line of text.split('\n')) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (m) {
      cur = { start: BigInt('0x' + m[1]), end: BigInt('0x' + m[2]), perms: m[3], name: m[4], rss: 0 };
      maps.push(cur);
      continue;
    }
    const r = /^Rss:\s+(\d+) kB/.exec(line);
    if (r && cur) cur.rss = Number(r[1]);
  }
  const MiB64 = 64n << 20n;
  for (let i = 0; i < maps.length; i++) {
    const mp = maps[i];
    let kind;
    if (mp.name === '[heap]') kind = 'heap';
    else if (mp.name.startsWith('[stack')) kind = 'stack';
    else if (mp.name.startsWith('/')) kind = 'file';
    else if (mp.name === '') {
      // glibc arena: heap_info regions are 64 MiB-aligned; the rw part starts at a 64 MiB boundary and the rest of
      // the 64 MiB is ---p right after it.
      const next = maps[i + 1];
      const aligned = mp.start % MiB64 === 0n;
      const tail =
        next &&
        next.start === mp.end &&
        next.perms.startsWith('---') &&
        next.name === '' &&
        next.end - mp.start === MiB64;
      kind = aligned && (tail || mp.end - mp.start === MiB64) && mp.perms.startsWith('rw') ? 'arena' : 'anon';
    } else kind = 'other';
    kinds[kind] += mp.rss;
  }
  return kinds;
}

function threads(pid) {
  try {
    return Number(/Threads:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))[1]);
  } catch {
    return null;
  }
}

const PRELOAD = (file) => `
const { appendFileSync } = require('node:fs');
const v8 = require('node:v8');
const t0 = Date.now();
setInterval(() => {
  const spaces = {};
  for (const s of v8.getHeapSpaceStatistics()) spaces[s.space_name] = s.space_size;
  appendFileSync(${JSON.stringify(file)}, JSON.stringify({ t: Math.round((Date.now() - t0) / 1000), ...process.memoryUsage(), spaces }) + '\\n');
}, 5000).unref();
`;

async function run() {
  const out = opts.out;
  mkdirSync(out, { recursive: true });
  const base = join(tmpdir(), `bpfscope-pmem-${process.pid}`);
  rmSync(base, { recursive: true, force: true });
  mkdirSync(base, { recursive: true });
  let cli = opts.cli;
  if (!cli) {
    symlinkSync(join(ROOT, 'node_modules'), join(base, 'node_modules'));
    cpSync(join(ROOT, 'dist'), join(base, 'dist'), { recursive: true });
    cli = join(base, 'dist', 'bundle', 'bpfscope.cjs');
  }
  const inside = join(base, 'inside.jsonl');
  writeFileSync(join(base, 'preload.cjs'), PRELOAD(inside));
  const child = spawn(process.execPath, ['--require', join(base, 'preload.cjs'), cli, ...opts.args.split(' ')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let ready = false;
  child.stdout.on('data', () => (ready = true));
  child.stdout.resume();
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise((r) => child.on('exit', (code, signal) => r({ code, signal })));
  while (!ready && !/Sampling|Attach|Tracing/.test(stderr)) await sleep(200);
  const load = spawn('sh', ['-c', LOAD_SH(base)], { stdio: 'ignore', detached: true });
  const samples = [];
  const t0 = Date.now();
  const end = t0 + Number(opts.minutes) * 60_000;
  while (Date.now() < end) {
    await sleep(Number(opts.every) * 1000);
    const k = smapsByKind(child.pid);
    if (!k) break;
    const lines = existsSync(inside) ? readFileSync(inside, 'utf8').trim().split('\n') : [];
    const last = lines.length ? JSON.parse(lines[lines.length - 1]) : null;
    const row = {
      t: Math.round((Date.now() - t0) / 1000),
      load1: loadavg()[0],
      threads: threads(child.pid),
      smapsKb: k,
      inside: last,
    };
    samples.push(row);
    const mb = (b) => (b / 1048576).toFixed(1);
    process.stderr.write(
      `t=${row.t}s load=${row.load1.toFixed(1)} thr=${row.threads} heap=${k.heap} arena=${k.arena} anon=${k.anon} file=${k.file} kB` +
        (last
          ? ` | rss=${mb(last.rss)} jsHeap=${mb(last.heapTotal)} ext=${mb(last.external)} ab=${mb(last.arrayBuffers)} MB`
          : '') +
        '\n',
    );
  }
  try {
    process.kill(-load.pid, 'SIGKILL');
  } catch {
    /* gone */
  }
  child.kill('SIGINT');
  const e = await Promise.race([exited, sleep(120_000).then(() => null)]);
  if (!e) child.kill('SIGKILL');
  writeFileSync(join(out, 'profile-memory.json'), JSON.stringify({ args: opts.args, samples, end: e }, null, 1) + '\n');
  rmSync(base, { recursive: true, force: true });
}

await run();
