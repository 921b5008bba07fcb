#!/usr/bin/env node
/**
 * How long `bpfscope profile` takes to print a FULL stack map after SIGINT (issue 19: 56.7 s for the 40,960-key map
 * of an 8-minute soak). For each build given (`--build LABEL=DIR`, DIR holding `dist/` and `node_modules/`; default:
 * this checkout as `current`), in one run, one after the other:
 * 1. a load of short-lived processes (`/bin/true` in a loop) and a CPU burner, so that the map fills with distinct
 *    (stack, process) keys;
 * 2. `profile -F 999` (bcc's defaults otherwise: 40,960 keys, 16,384 stacks) until its "Map full" warning;
 * 3. the load stopped, then SIGINT: the seconds until the process has exited (the report written to a file), the
 *    CPU seconds it used meanwhile (user + system, from /proc/PID/stat: what the machine's load does not inflate),
 *    and the report's lines and bytes.
 * The load average (1 min) at the SIGINT is recorded: the machine is shared. Not a test: prints a Markdown table
 * and writes bench/results/profile-report.json. Usage (root):
 *   sudo node bench/reliability/profile-report.mjs --build before=/tmp/old --build after=.
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { RESULTS_DIR, ROOT } from '../lib/env.mjs';
import { cpuTicks } from '../lib/proc.mjs';

const argv = process.argv.slice(2);
const builds = [];
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--build') {
    const [label, dir] = argv[++i].split('=');
    builds.push({ label, dir: resolve(dir) });
  }
}
if (builds.length === 0) builds.push({ label: 'current', dir: ROOT });
const FILL_TIMEOUT_MS = 300_000;

const CLK_TCK = 100;

function exited(child) {
  return new Promise((res) => (child.exitCode !== null ? res() : child.once('exit', () => res())));
}

async function one({ label, dir }) {
  const load = spawn('sh', ['-c', '(while :; do /bin/true; done) & (while :; do :; done) & wait'], {
    stdio: 'ignore',
    detached: true,
  });
  const outPath = join(tmpdir(), `bpfscope-profile-report-${label}.txt`);
  const out = openSync(outPath, 'w');
  const child = spawn(process.execPath, [join(dir, 'dist', 'src', 'cli', 'main.js'), 'profile', '-F', '999'], {
    stdio: ['ignore', out, 'pipe'],
  });
  closeSync(out);
  let err = '';
  const full = new Promise((res, rej) => {
    const t = setTimeout(
      () => rej(new Error(`${label}: the map did not fill in ${FILL_TIMEOUT_MS / 1000} s`)),
      FILL_TIMEOUT_MS,
    );
    child.stderr.on('data', (d) => {
      err += d;
      if (err.includes('Map full')) {
        clearTimeout(t);
        res();
      }
    });
    child.once('exit', () => {
      clearTimeout(t);
      rej(new Error(`${label}: profile exited early: ${err}`));
    });
  });
  const started = Date.now();
  try {
    await full;
  } finally {
    process.kill(-load.pid, 'SIGKILL');
  }
  const fillSec = (Date.now() - started) / 1000;
  const load1 = loadavg()[0];
  // CPU time of the report: utime + stime polled until the process is gone (the last <100 ms may be missed)
  const cpuAt = cpuTicks(child.pid);
  let cpuLast = cpuAt;
  const poll = setInterval(() => {
    const t = cpuTicks(child.pid);
    if (t !== null) cpuLast = t;
  }, 100);
  const t0 = process.hrtime.bigint();
  child.kill('SIGINT');
  await exited(child);
  clearInterval(poll);
  const reportSec = Number(process.hrtime.bigint() - t0) / 1e9;
  const reportCpuSec = (cpuLast - cpuAt) / CLK_TCK;
  const text = readFileSync(outPath, 'latin1');
  let lines = 0;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) lines++;
  return {
    label,
    dir,
    fillSec: Math.round(fillSec),
    reportSec: Math.round(reportSec * 10) / 10,
    reportCpuSec: Math.round(reportCpuSec * 10) / 10,
    lines,
    bytes: statSync(outPath).size,
    load1: Math.round(load1 * 10) / 10,
    exit: child.exitCode,
  };
}

const results = [];
for (const b of builds) results.push(await one(b));
console.log(
  '| build | map filled in | SIGINT to exit | CPU time of the report | report lines | report bytes | load avg (1 min) | exit |',
);
console.log('|---|---|---|---|---|---|---|---|');
for (const r of results) {
  console.log(
    `| ${r.label} | ${r.fillSec} s | **${r.reportSec} s** | ${r.reportCpuSec} s | ${r.lines.toLocaleString('en')} | ${(r.bytes / 1e6).toFixed(1)} MB | ${r.load1} | ${r.exit} |`,
  );
}
writeFileSync(
  join(RESULTS_DIR, 'profile-report.json'),
  `${JSON.stringify({ date: new Date().toISOString(), results }, null, 2)}\n`,
);
