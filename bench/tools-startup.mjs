#!/usr/bin/env node
/**
 * Tool start-up of two or more builds of bpfscope, interleaved (A B A B ... per tool and round): launch to the tool's
 * first stdout line (as `bench/run.mjs tools` measures it, with the same arguments for the multi-tools) and the CPU
 * time the process had used by then (the sum of /proc/PID/task/TID/schedstat run times of all its threads, in ms:
 * far less sensitive to the other load on a shared machine than wall time). Then SIGINT and wait for the exit.
 *
 *   node bench/tools-startup.mjs [--rounds N] [--tools a,b,c] [--json FILE] [--no-warmup] [--keep-extra-ca-certs]
 *     NAME=DIR [NAME=DIR ...]
 *
 * DIR is a directory holding a built `dist/` (and a `node_modules`, or a symlink to one, for koffi); the command run
 * is DIR/dist/bundle/bpfscope.cjs, as users run it. Without --tools, every tool that the first build's `bpfscope
 * tools` lists (its first block: the bcc tools, not the other commands). Each build runs each tool once before the
 * measured rounds (to write its V8 code cache and its cache of linked programs, runtime/link-cache.ts, as any
 * installed bpfscope has after its first run). Prints a markdown table of medians (min-max) and, per build, the
 * load average before and after. --no-warmup skips the unmeasured runs, for copies whose caches an earlier run of
 * the same tools has written already.
 *
 * Environment: every tool runs without NODE_EXTRA_CA_CERTS (as bench/run.mjs: `sudo` clears it for users, and this
 * development sandbox exports it, which makes every node process parse a 200 KB CA bundle before running any
 * JavaScript: bench/README.md, Method). --keep-extra-ca-certs runs them with this process's environment as it is,
 * to measure what the variable costs here (recorded in bench/README.md: ~30 ms of wall and CPU per start).
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { launch, sleep, waitPerfFds } from './lib/proc.mjs';
import { bpfscopeTools, TOOL_ARGS, TOOL_NO_LINE_FDS } from './lib/tools.mjs';

const argv = process.argv.slice(2);
let rounds = 3;
let only = null;
let jsonOut = null;
let warmup = true;
let keepCaCerts = false;
const builds = [];
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === '--rounds') rounds = Number(argv[++i]);
  else if (a === '--tools') only = argv[++i].split(',');
  else if (a === '--json') jsonOut = argv[++i];
  else if (a === '--no-warmup') warmup = false;
  else if (a === '--keep-extra-ca-certs') keepCaCerts = true;
  else if (a.includes('=')) {
    const [name, dir] = a.split('=');
    builds.push({ name, cli: join(dir, 'dist', 'bundle', 'bpfscope.cjs') });
  } else {
    console.error(`unknown argument ${a}`);
    process.exit(2);
  }
}
if (!builds.length) {
  console.error(
    'usage: node bench/tools-startup.mjs [--rounds N] [--tools a,b] [--json FILE] [--no-warmup] [--keep-extra-ca-certs] NAME=DIR ...',
  );
  process.exit(2);
}

/** CPU time of all threads of `pid` so far, ms (schedstat: ns on the CPU), or null when it is gone. */
function cpuMs(pid) {
  let ns = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'latin1').split(' ')[0]);
      } catch {
        /* thread ended */
      }
    }
  } catch {
    return null;
  }
  return ns / 1e6;
}

async function once(cli, tool) {
  const noLine = TOOL_NO_LINE_FDS[tool];
  const env = { ...process.env };
  if (!keepCaCerts) delete env.NODE_EXTRA_CA_CERTS;
  const h = launch({
    cmd: cli,
    args: [tool, ...(TOOL_ARGS[tool] ?? [])],
    readyRe: /\S/,
    readyOn: 'stdout',
    env,
    sampleMs: 1000,
    timeoutMs: 30000,
  });
  const readyMs = noLine ? await waitPerfFds(h, noLine(), 25000) : await h.ready;
  const cpu = readyMs !== null ? cpuMs(h.pid) : null;
  h.signal('SIGINT');
  const ex = await h.exited;
  const ok = readyMs !== null && cpu !== null && !/^(error|usage)/i.test(h.readyLine ?? '');
  return { ok, readyMs, cpuMs: cpu, exit: ex.code ?? ex.signal, err: ok ? null : h.err().trim().split('\n').at(-1) };
}

const tools = only ?? bpfscopeTools(builds[0].cli);
const raw = Object.fromEntries(tools.map((t) => [t, Object.fromEntries(builds.map((b) => [b.name, []]))]));
const load = { before: loadavg()[0] };
const failed = {};
// warm-up: one run per build and tool (writes the code cache of the tool's mode)
if (warmup) for (const t of tools) for (const b of builds) await once(b.cli, t);
for (let r = 0; r < rounds; r++) {
  for (const t of tools) {
    for (const b of builds) {
      const x = await once(b.cli, t);
      if (x.ok) raw[t][b.name].push(x);
      else failed[`${b.name} ${t}`] = x.err;
      await sleep(20);
    }
  }
  console.error(`round ${r + 1}/${rounds} done, load ${loadavg()[0].toFixed(2)}`);
}
load.after = loadavg()[0];

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : NaN;
};
const fmt = (xs) =>
  xs.length ? `${median(xs).toFixed(0)} (${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)})` : '–';
const names = builds.map((b) => b.name);
const lines = [
  `load average ${load.before.toFixed(2)} -> ${load.after.toFixed(2)}, ${rounds} rounds, median (min-max) ms, ` +
    (keepCaCerts && process.env.NODE_EXTRA_CA_CERTS
      ? `NODE_EXTRA_CA_CERTS=${process.env.NODE_EXTRA_CA_CERTS}`
      : 'without NODE_EXTRA_CA_CERTS'),
  '',
  `| tool | ${names.map((n) => `${n}: wall`).join(' | ')} | ${names.map((n) => `${n}: CPU`).join(' | ')} |` +
    (names.length === 2 ? ' wall ratio | CPU ratio |' : ''),
  `|---|${names.map(() => '--:|').join('')}${names.map(() => '--:|').join('')}` +
    (names.length === 2 ? '--:|--:|' : ''),
];
for (const t of tools) {
  const w = names.map((n) => raw[t][n].map((x) => x.readyMs));
  const c = names.map((n) => raw[t][n].map((x) => x.cpuMs));
  let row = `| ${t} | ${w.map(fmt).join(' | ')} | ${c.map(fmt).join(' | ')} |`;
  if (names.length === 2) {
    row += ` ${(median(w[1]) / median(w[0])).toFixed(2)}x | ${(median(c[1]) / median(c[0])).toFixed(2)}x |`;
  }
  lines.push(row);
}
console.log(lines.join('\n'));
if (Object.keys(failed).length) console.log(`\nfailed: ${JSON.stringify(failed, null, 1)}`);
if (jsonOut) writeFileSync(jsonOut, JSON.stringify({ load, rounds, raw, failed }, null, 1));
