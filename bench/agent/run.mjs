#!/usr/bin/env node
/**
 * Agent overhead (issue 15): `bpfscope agent` sampling every CPU at 49 Hz with a 10 s period, pushing to a local
 * sink that accepts every Pyroscope push, beside what the same profile costs with the peers writing folded stacks on
 * the same interval:
 * - bpftrace 0.17: `profile:hz:49 { @[kstack, ustack, comm, pid] = count(); } interval:s:10 { print(@); clear(@); }`
 *   (bpftrace has no folded output; its stack map print is the closest, symbolized the same way);
 * - bcc's profile (Debian's profile-bpfcc) `-F 49 -f 10`: one 10 s run printing folded stacks, restarted for each
 *   period (bcc's profile has no interval mode), so its start-up cost is part of each period.
 * The machine is kept busy: two CPU-bound processes (one per CPU of the 2-CPU VM) run for the whole measurement,
 * besides whatever else runs on the machine. Each tool runs for `--seconds` (default 40) after a 25 s warm-up; its
 * CPU (utime + stime of the tool and its children, from /proc/PID/stat, as a % of one CPU over the wall time) and
 * resident memory (VmRSS at the end, VmHWM peak) are measured. Kernel time in the BPF programs themselves is not
 * included (it is the same program shape for all three).
 * The agent runs twice: as installed (the bundle run as a command: its /bin/sh prelude starts node with
 * `--max-semi-space-size=1 --v8-pool-size=1` for `agent`, see docs/fleet-agent.md "Overhead") and as
 * `node --max-semi-space-size=1 BUNDLE agent` (no prelude; before agent9 the only way to get the smaller young
 * generation). `--as-node` runs every bundle as `node BUNDLE` instead of as a command.
 * Two floors are measured the same way: node with nothing loaded, and the agent profiling one sleeping process (the
 * bundle, the BPF session and its timers, no samples): what no amount of caching can remove.
 * A peer that cannot run here (bcc's profile needs kernel headers or CONFIG_IKHEADERS) is listed with the reason
 * and no numbers. The load average (1 min) is recorded before and after each tool.
 * Not a test: prints a Markdown table and writes bench/results/agent.json. Usage: sudo node bench/agent/run.mjs
 * [--seconds N] [--warmup N] [--only KEYS] [--before BUNDLE [--together]] [--bundle BUNDLE] [--variants SPEC] [--as-node] [--json FILE]
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { RESULTS_DIR, ROOT } from '../lib/env.mjs';

const argv = process.argv.slice(2);
const opt = (name, dflt) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const SECONDS = Number(opt('--seconds', '40'));
// --only KEY,...: run these only (agent, agent-semi, floor-node, floor-agent, bpftrace, bcc);
// --before BUNDLE: also the agent of another build (e.g. the commit before a change), right before this one;
// --json FILE: where the results go (default bench/results/agent.json)
const ONLY = opt('--only', undefined)?.split(',');
const BEFORE = opt('--before', undefined);
const JSON_OUT = opt('--json', join(RESULTS_DIR, 'agent.json'));
const want = (key) => !ONLY || ONLY.includes(key);
// --together: with --before, the two agents run at the same time (the same workload for both: on a shared machine
// the load changes from minute to minute, so one after the other compares different workloads)
const TOGETHER = argv.includes('--together');
// --bundle BUNDLE: the current build's agent from this file instead of dist/bundle/bpfscope.cjs (a copy, so that a
// rebuild during the run cannot change it)
const BUNDLE = opt('--bundle', join(ROOT, 'dist', 'bundle', 'bpfscope.cjs'));
// --variants 'LABEL=FLAGS;LABEL=FLAGS': the current build's agent under these node flags (space-separated), all run at
// the same time as the plain agent (and the --before agent when given): one workload for every variant
const VARIANTS = opt('--variants', undefined)
  ?.split(';')
  .filter(Boolean)
  .map((v) => ({
    label: v.slice(0, v.indexOf('=')),
    flags: v
      .slice(v.indexOf('=') + 1)
      .split(' ')
      .filter(Boolean),
  }));
// A bundle runs as the installed command (`BUNDLE agent ...`: its /bin/sh prelude, with the V8 flags it gives the
// agent); --as-node runs `node BUNDLE agent ...` instead (no prelude), as this bench did before agent9.
const AS_NODE = argv.includes('--as-node');
const agentCmd = (bundle, args) => (AS_NODE ? [process.execPath, [bundle, ...args]] : [bundle, args]);
// --warmup N: seconds before the measured window (default 25). The agent's first period ends 0-10 s after its start
// and the second, 10 s later, symbolizes every process on the host for the first time (~0.4-0.5 s of CPU here, in
// every build): with 12 s it fell inside or outside the 40 s window by chance (0.25-1.47% for the same build). The
// CPU spent before the window (start + first symbolization) is reported in its own column.
const WARMUP = Number(opt('--warmup', '25'));
const CLK_TCK = 100;

function statOf(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return { ticks: Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]), ppid: Number(f[1]) };
  } catch {
    return null;
  }
}

/** CPU ticks of `pid` and its live descendants (bcc's python restarts: the wrapper's children). */
function treeTicks(pid) {
  const kids = new Map();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const s = statOf(Number(d));
    if (s) kids.set(Number(d), s);
  }
  let total = 0;
  const walk = (p) => {
    const s = kids.get(p);
    if (s) total += s.ticks;
    for (const [c, cs] of kids) if (cs.ppid === p) walk(c);
  };
  walk(pid);
  return total;
}

function memOf(pid) {
  const out = { rss: 0, hwm: 0 };
  const walk = (p) => {
    try {
      const st = readFileSync(`/proc/${p}/status`, 'utf8');
      out.rss += Number(/VmRSS:\s+(\d+)/.exec(st)?.[1] ?? 0) * 1024;
      out.hwm += Number(/VmHWM:\s+(\d+)/.exec(st)?.[1] ?? 0) * 1024;
    } catch {
      /* gone */
    }
    for (const d of readdirSync('/proc')) if (/^\d+$/.test(d) && statOf(Number(d))?.ppid === p) walk(Number(d));
  };
  walk(pid);
  return out;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function measure(name, cmd, args) {
  const load0 = loadavg()[0];
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let err = '';
  child.stderr.on('data', (b) => (err += b));
  let exitCode;
  const exited = new Promise((r) => child.on('exit', (code, sig) => r((exitCode = code ?? sig))));
  await sleep(WARMUP * 1000);
  const t0 = treeTicks(child.pid);
  const startSeconds = t0 / CLK_TCK;
  const w0 = performance.now();
  await sleep(SECONDS * 1000);
  const t1 = treeTicks(child.pid);
  const wall = (performance.now() - w0) / 1000;
  const mem = memOf(child.pid);
  // SIGINT ends bpftrace and the agent cleanly; the bcc loop's shell may go on: SIGKILL the group after 5 s
  if (exitCode !== undefined)
    return { name, skipped: `exited before the end (${exitCode}): ${err.trim().split('\n').slice(-3).join(' ')}` };
  process.kill(-child.pid, 'SIGINT');
  const late = setTimeout(() => process.kill(-child.pid, 'SIGKILL'), 5000);
  await exited;
  clearTimeout(late);
  try {
    process.kill(-child.pid, 'SIGKILL'); // what is left of the group (bcc's profile between two runs)
  } catch {
    /* gone */
  }
  const cpu = ((t1 - t0) / CLK_TCK / wall) * 100;
  return {
    name,
    cpu_percent: cpu,
    warmup_cpu_seconds: startSeconds,
    rss_mb: mem.rss / 2 ** 20,
    hwm_mb: mem.hwm / 2 ** 20,
    load: [load0, loadavg()[0]].map((l) => Number(l.toFixed(1))),
    stderr: err.slice(0, 300),
  };
}

const sink = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'Content-Type': 'application/proto' }).end());
});
await new Promise((r) => sink.listen(0, '127.0.0.1', r));
const port = sink.address().port;
const spinners = [0, 1].map(() => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore', detached: true }));
// the spinners die with this script, however it ends
const killSpinners = () => {
  for (const s of spinners) {
    try {
      process.kill(-s.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
};
process.on('exit', killSpinners);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(1));
const results = [];
try {
  const agentArgs = [`--pyroscope=http://127.0.0.1:${port}`, '--hz=49', '--period=10s', '--no-metrics'];
  if (VARIANTS) {
    const runs = [];
    if (BEFORE) runs.push(measure(`bpfscope agent, before (${BEFORE})`, ...agentCmd(BEFORE, ['agent', ...agentArgs])));
    runs.push(measure('bpfscope agent', ...agentCmd(BUNDLE, ['agent', ...agentArgs])));
    for (const v of VARIANTS)
      runs.push(
        measure(`bpfscope agent (node ${v.flags.join(' ')}) [${v.label}]`, process.execPath, [
          ...v.flags,
          BUNDLE,
          'agent',
          ...agentArgs,
        ]),
      );
    results.push(...(await Promise.all(runs)));
  } else if (BEFORE && TOGETHER && want('agent')) {
    results.push(
      ...(await Promise.all([
        measure(`bpfscope agent, before (${BEFORE}), run together`, ...agentCmd(BEFORE, ['agent', ...agentArgs])),
        measure('bpfscope agent, run together', ...agentCmd(BUNDLE, ['agent', ...agentArgs])),
      ])),
    );
  } else if (BEFORE && want('agent'))
    results.push(await measure(`bpfscope agent, before (${BEFORE})`, ...agentCmd(BEFORE, ['agent', ...agentArgs])));
  if (want('agent') && !(BEFORE && TOGETHER) && !VARIANTS)
    results.push(await measure('bpfscope agent', ...agentCmd(BUNDLE, ['agent', ...agentArgs])));
  if (want('agent-semi'))
    results.push(
      await measure('bpfscope agent (node --max-semi-space-size=1)', process.execPath, [
        '--max-semi-space-size=1',
        BUNDLE,
        'agent',
        ...agentArgs,
      ]),
    );
  // the floor: node itself with nothing loaded, and the agent with nothing to profile (-p of a sleeping process:
  // the bundle, the BPF session and the timers, but no samples, so no symbols and no profiles to speak of)
  if (want('floor-node'))
    results.push(
      await measure('floor: node, nothing loaded (setInterval)', process.execPath, [
        '-e',
        'setInterval(() => {}, 1e6)',
      ]),
    );
  const idle = spawn('sleep', ['3600'], { stdio: 'ignore', detached: true });
  spinners.push(idle);
  const idleArgs = [
    'agent',
    `--pyroscope=http://127.0.0.1:${port}`,
    '--hz=49',
    '--period=10s',
    `--pid=${idle.pid}`,
    '--no-metrics',
  ];
  // with --before, both floors at the same time
  if (want('floor-agent'))
    results.push(
      ...(await Promise.all([
        ...(BEFORE
          ? [measure(`floor: bpfscope agent -p IDLE_PID, before (${BEFORE})`, ...agentCmd(BEFORE, idleArgs))]
          : []),
        measure('floor: bpfscope agent -p IDLE_PID (nothing sampled)', ...agentCmd(BUNDLE, idleArgs)),
      ])),
    );
  if (want('bpftrace'))
    results.push(
      await measure('bpftrace 0.17 (print + clear every 10 s)', 'bpftrace', [
        '-e',
        'profile:hz:49 { @[kstack, ustack, comm, pid] = count(); } interval:s:10 { print(@); clear(@); }',
      ]),
    );
  // bcc compiles its C program at start: without kernel headers it cannot run at all (no numbers, the reason)
  const probe = want('bcc')
    ? spawnSync('profile-bpfcc', ['-F', '49', '-f', '1'], { encoding: 'utf8', timeout: 60000 })
    : { status: -1, skip: true };
  const bcc = 'bcc profile -F 49 -f 10 (restarted every 10 s)';
  if (probe.status === 0) {
    results.push(await measure(bcc, 'sh', ['-c', 'while :; do profile-bpfcc -F 49 -f 10 >/dev/null; done']));
  } else if (!probe.skip) {
    const why = (probe.error?.message ?? probe.stderr ?? '').trim().split('\n');
    results.push({
      name: bcc,
      skipped: `cannot run here: ${why.find((l) => /Error|FATAL|No such/.test(l)) ?? why[0]}`,
    });
  }
} finally {
  killSpinners();
  sink.close();
}
const load = loadavg()[0].toFixed(1);
let md = `Agent overhead at 49 Hz, 2 CPUs kept busy (+ load average ${load} from the rest of the machine), ${SECONDS} s after ${WARMUP} s warm-up:\n\n`;
md +=
  '| tool | CPU (% of one CPU) | CPU s in the warm-up | RSS at end (MiB) | peak RSS, VmHWM (MiB) | load avg before/after |\n';
md += '|---|---:|---:|---:|---:|---|\n';
for (const r of results) {
  if (r.skipped) md += `| ${r.name} | ${r.skipped} | | | | |\n`;
  else
    md += `| ${r.name} | ${r.cpu_percent.toFixed(2)} | ${r.warmup_cpu_seconds.toFixed(2)} | ${r.rss_mb.toFixed(1)} | ${r.hwm_mb.toFixed(1)} | ${r.load.join(' / ')} |\n`;
}
process.stdout.write(md);
writeFileSync(
  JSON_OUT,
  `${JSON.stringify({ date: new Date().toISOString(), load, seconds: SECONDS, warmup: WARMUP, results }, null, 2)}\n`,
);
