#!/usr/bin/env node
// Start-up benchmark for the bpfscope CLI (issue 4): launch -> exit and peak RSS of `BEGIN { exit(); }`, launch ->
// `Attached` and launch -> exit of a count on t:syscalls:sys_enter_openat (SIGINT once attached), launch -> the
// "Tracing" line of `syscount`, and bpftrace as the reference. Each variant runs once per round, rounds alternate
// the variants, and the median of each column is printed. Peak RSS is /usr/bin/time's %M (max RSS) of the measured
// process; CPU ms is its user + system time (less sensitive to other load than wall time). bpftrace runs under
// `stdbuf -oL` (its attach line goes to stdout) and its "ready" is its `Attaching N probes...` line, which it prints
// before attaching. Needs root. To compare two builds, copy one dist/ away first (with a node_modules symlink next
// to it so koffi resolves).
//
// --no-extra-ca runs everything without NODE_EXTRA_CA_CERTS: when it is set (as in some sandboxes), node parses that
// CA bundle at every start before any JavaScript runs (~40-60 ms and ~2 MB here), which sudo's environment reset
// normally removes for a user.
//
// Usage: node scripts/startup-bench.mjs [--rounds N] [--bpftrace] [--no-extra-ca] NAME=ENTRY [NAME=ENTRY ...]
//   e.g. node scripts/startup-bench.mjs --bpftrace bundle=dist/bundle/bpfscope.mjs modules=dist/src/cli/main.js
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
let rounds = 10;
let withBpftrace = false;
const variants = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--rounds') rounds = Number(args[++i]);
  else if (args[i] === '--bpftrace') withBpftrace = true;
  else if (args[i] === '--no-extra-ca') delete process.env.NODE_EXTRA_CA_CERTS;
  else {
    const [name, entry] = args[i].split('=');
    variants.push({ name, cmd: [process.execPath, entry] });
  }
}
if (withBpftrace) variants.push({ name: 'bpftrace', cmd: ['stdbuf', '-oL', '/usr/bin/bpftrace'], bpftrace: true });
if (variants.length === 0) {
  console.error('usage: startup-bench.mjs [--rounds N] [--bpftrace] NAME=ENTRY.js ...');
  process.exit(2);
}

/** The pid of the (only) child of `pid`, or undefined. */
function childOf(pid) {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ')[0]) || undefined;
  } catch {
    return undefined;
  }
}

/**
 * Runs `cmd` under /usr/bin/time. When `ready` is given, records the time until it matches stdout or stderr and
 * then sends SIGINT to the measured process (time's child). Resolves { total, ready, rss } in ms and MB.
 */
function run(cmd, ready) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const ms = () => Number(process.hrtime.bigint() - t0) / 1e6;
    const child = spawn('/usr/bin/time', ['-f', '@@ %e %M %U %S', ...cmd], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let readyAt;
    let resend;
    const check = () => {
      if (ready && readyAt === undefined && (ready.test(out) || ready.test(err))) {
        readyAt = ms();
        const pid = childOf(child.pid);
        if (!pid) return;
        process.kill(pid, 'SIGINT');
        // bpftrace prints its attach line before attaching and may miss a SIGINT that arrives that early: repeat.
        resend = setInterval(() => {
          try {
            process.kill(pid, 'SIGINT');
          } catch {
            // gone
          }
        }, 250);
      }
    };
    child.stdout.on('data', (b) => {
      out += b;
      check();
    });
    child.stderr.on('data', (b) => {
      err += b;
      check();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('close', () => {
      clearTimeout(timer);
      clearInterval(resend);
      const total = ms();
      const m = /@@ ([\d.]+) (\d+) ([\d.]+) ([\d.]+)/.exec(err);
      if (!m) return reject(new Error(`${cmd.join(' ')}: no /usr/bin/time line\n${out}\n${err}`));
      if (ready && readyAt === undefined) return reject(new Error(`${cmd.join(' ')}: never matched ${ready}\n${err}`));
      resolve({ total, ready: readyAt, rss: Number(m[2]) / 1024, cpu: (Number(m[3]) + Number(m[4])) * 1000 });
    });
  });
}

const ATTACHED = /Attach(ed|ing) \d+ probes?/;
const scenarios = [
  { name: 'BEGIN{exit()}', args: () => ['-e', 'BEGIN { exit(); }'] },
  {
    name: 'count openat',
    args: () => ['-e', 't:syscalls:sys_enter_openat { @[comm] = count(); }'],
    ready: ATTACHED,
  },
  { name: 'syscount', args: (v) => (v.bpftrace ? undefined : ['syscount']), ready: /Tracing/ },
];

const median = (xs) => {
  const s = xs.filter((x) => x !== undefined).sort((a, b) => a - b);
  if (s.length === 0) return undefined;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

for (const sc of scenarios) {
  const results = new Map(variants.map((v) => [v.name, []]));
  for (let r = 0; r < rounds; r++) {
    for (const v of variants) {
      const a = sc.args(v);
      if (!a) continue;
      results.get(v.name).push(await run([...v.cmd, ...a], sc.ready));
    }
  }
  console.log(`\n${sc.name} (median of ${rounds})`);
  console.log(
    `  ${'variant'.padEnd(12)} ${'exit ms'.padStart(8)} ${'ready ms'.padStart(9)} ${'RSS MB'.padStart(7)} ${'CPU ms'.padStart(7)}`,
  );
  for (const v of variants) {
    const rs = results.get(v.name);
    if (rs.length === 0) continue;
    const f = (x, d) => (x === undefined ? '-' : x.toFixed(d));
    const exit = median(rs.map((x) => x.total));
    const ready = median(rs.map((x) => x.ready));
    const rss = median(rs.map((x) => x.rss));
    const cpu = median(rs.map((x) => x.cpu));
    console.log(
      `  ${v.name.padEnd(12)} ${f(exit, 0).padStart(8)} ${f(ready, 0).padStart(9)} ${f(rss, 1).padStart(7)} ${f(cpu, 0).padStart(7)}`,
    );
  }
}
