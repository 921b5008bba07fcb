#!/usr/bin/env node
/**
 * What the agent keeps, every 10 s (issue 15), bench-only: runs `bpfscope agent` in this process (dist/src, as
 * profile.mjs, pushing to a local sink) with two CPU-bound spinners, and prints per 10 s: RSS, array buffers and
 * V8 heap used (process.memoryUsage(), MB), the ELF symbol tables held (files, MB of their typed arrays), the
 * kallsyms table (MB), the resolver's per-process state (`retained`: processes, mappings, maps text characters,
 * address-cache slots), the profiler's cached kernel/user stacks, the agent's process cache and the periods
 * processed. Reads private fields of SymbolResolver and Profiler (a bench, not an API: it breaks if they are
 * renamed). At the end, the largest symbol tables by file key (device:inode:size:mtime).
 *
 * Usage: sudo node bench/agent/retained.mjs [--seconds N]   (default 60)
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../lib/env.mjs';

const argv = process.argv.slice(2);
const SECONDS = Number(argv.includes('--seconds') ? argv[argv.indexOf('--seconds') + 1] : '60');
const MB = (n) => (n / 1048576).toFixed(1);

const sink = createServer((q, r) => {
  q.resume();
  q.on('end', () => r.writeHead(200).end());
});
await new Promise((r) => sink.listen(0, '127.0.0.1', r));
const spinners = [0, 1].map(() => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
process.on('exit', () => spinners.forEach((s) => s.kill('SIGKILL')));
const { parseAgentArgs, runAgent } = await import(join(ROOT, 'dist', 'src', 'fleet', 'agent', 'main.js'));
const { SymbolResolver } = await import(join(ROOT, 'dist', 'src', 'symbols', 'resolver.js'));
const { Profiler } = await import(join(ROOT, 'dist', 'src', 'fleet', 'agent', 'profiler.js'));
let resolver;
let profiler;
const create = SymbolResolver.create.bind(SymbolResolver);
SymbolResolver.create = async (...a) => (resolver = await create(...a));
const start = Profiler.start.bind(Profiler);
Profiler.start = async (...a) => (profiler = await start(...a));
void runAgent(
  parseAgentArgs([`--pyroscope=http://127.0.0.1:${sink.address().port}`, '--hz=49', '--period=10s', '--no-metrics']),
);

/** Bytes of the typed arrays reachable from `o` within a few levels. */
function typedBytes(o, seen = new Set(), depth = 0) {
  if (!o || typeof o !== 'object' || seen.has(o) || depth > 4) return 0;
  seen.add(o);
  if (ArrayBuffer.isView(o)) return o.byteLength;
  let n = 0;
  for (const v of Object.values(o)) n += typedBytes(v, seen, depth + 1);
  return n;
}

let files = [];
for (let t = 10; t <= SECONDS; t += 10) {
  await new Promise((r) => setTimeout(r, 10_000));
  const mu = process.memoryUsage();
  files = resolver ? [...resolver.files].filter(([, e]) => e).map(([key, e]) => [key, typedBytes(e.syms)]) : [];
  const ret = resolver?.retained ?? {};
  const ustacks = profiler ? [...profiler.ucache.values()].reduce((a, m) => a + m.size, 0) : 0;
  console.log(
    `t=${t}s load ${loadavg()[0].toFixed(1)} rss ${MB(mu.rss)} arrayBuffers ${MB(mu.arrayBuffers)} heapUsed ` +
      `${MB(mu.heapUsed)} | symbol tables ${files.length} ${MB(files.reduce((a, [, b]) => a + b, 0))} MB, kallsyms ` +
      `${MB(typedBytes(resolver?.ksyms))} MB | resolver ${JSON.stringify(ret)} | stacks k ${profiler?.kcache.size ?? 0}` +
      ` u ${ustacks} | agent processes ${profiler?.procs.procs.size ?? 0}, periods ${profiler?.periodNo ?? 0}`,
  );
}
for (const [key, b] of files.sort((x, y) => y[1] - x[1]).slice(0, 8)) console.log(`  ${MB(b).padStart(6)} MB  ${key}`);
process.exit(0);
