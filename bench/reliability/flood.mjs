#!/usr/bin/env node
/**
 * Flood (issue 19, campaign item 3): the machine's maximum event rate on both CPUs, traced by a printf program, with
 * bpfscope's output going to a pipe read at once, to a file (-o), and to a pipe whose reader stalls for a while.
 *
 *   sudo node bench/reliability/flood.mjs [--seconds 60] [--stall 20] [--modes pipe,file,stalled] [--out DIR]
 *                                         [--cli dist/bundle/bpfscope.cjs]
 *
 * Each mode: bpfscope runs
 *   tracepoint:syscalls:sys_enter_getppid /comm == "bpfs_flood"/ { @n = count(); printf("%d %d\n", tid, nsecs); }
 * and, once it prints `Attached 1 probe`, two workloads (bench/c/workload.c built as `bpfs_flood`, one pinned to
 * each CPU with taskset) call getppid back to back for SECONDS + 3 s. SIGINT goes to bpfscope at SECONDS, in the
 * middle of the flood; the time from SIGINT to its exit is recorded.
 *   pipe     stdout is a FIFO read by flood_sink.c (1 MiB reads, counts event lines) from the start
 *   file     -o FILE; the file is counted by flood_sink afterwards
 *   stalled  the FIFO's reader holds it open but reads nothing for --stall s, then reads as fast as `pipe`
 * Counted: delivered events (lines starting with a digit), `@n` (the program's own count of the events it ran:
 * a BPF counter independent of bpfscope's lost-events counter), and the sum of bpfscope's `Lost N events` notices
 * on stderr. Losses counted in BPF = @n - delivered; the invariant is that it equals the notices' sum. Memory:
 * VmHWM of bpfscope from /proc/PID/status every 100 ms (the last sample before exit). Results go to
 * DIR/flood.json (default bench/reliability/results) and a table on stdout.
 */
import { execFileSync, spawn } from 'node:child_process';
import {
  closeSync,
  constants,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = dirname(dirname(HERE));

const { values: opts } = parseArgs({
  options: {
    seconds: { type: 'string', default: '60' },
    stall: { type: 'string', default: '20' },
    modes: { type: 'string', default: 'pipe,file,stalled' },
    out: { type: 'string', default: join(HERE, 'results') },
    cli: { type: 'string', default: join(ROOT, 'dist', 'bundle', 'bpfscope.cjs') },
  },
});

const PROGRAM =
  'tracepoint:syscalls:sys_enter_getppid /comm == "bpfs_flood"/ { @n = count(); printf("%d %d\\n", tid, nsecs); }';
const CLI = opts.cli;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function hwmKb(pid) {
  try {
    return Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1]);
  } catch {
    return null;
  }
}

async function until(cond, ms, what) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`flood: timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** flood_sink's output: the copied non-event lines, events and bytes. */
function parseSink(text) {
  const m = /flood_sink events=(\d+) bytes=(\d+)/.exec(text);
  const n = /^@n: (\d+)$/m.exec(text);
  return { delivered: m ? Number(m[1]) : null, bytes: m ? Number(m[2]) : null, bpfCount: n ? Number(n[1]) : null };
}

async function runMode(mode, dir, bins, seconds, stall) {
  const errPath = join(dir, `${mode}.err`);
  const sinkOut = join(dir, `${mode}.sink`);
  const filePath = join(dir, `${mode}.out`);
  const fifo = join(dir, `${mode}.fifo`);
  const err = openSync(errPath, 'w');
  let sink = null;
  let wfd = 'ignore';
  if (mode !== 'file') {
    rmSync(fifo, { force: true });
    execFileSync('mkfifo', [fifo]);
    // O_RDWR never blocks on a FIFO; kept open until the reader has opened its end (no EPIPE before that)
    const hold = openSync(fifo, constants.O_RDWR);
    const delay = mode === 'stalled' ? stall : 0;
    sink = spawn('sh', ['-c', `exec <"${fifo}" >"${sinkOut}"; sleep ${delay}; exec "${bins.sink}"`], {
      stdio: 'ignore',
    });
    await until(
      () => {
        try {
          return readlinkSync(`/proc/${sink.pid}/fd/0`) === fifo;
        } catch {
          return false;
        }
      },
      10_000,
      'the reader to open the FIFO',
    );
    wfd = openSync(fifo, constants.O_WRONLY);
    closeSync(hold);
  }
  const args = mode === 'file' ? ['-o', filePath, '-e', PROGRAM] : ['-e', PROGRAM];
  const env = { ...process.env };
  delete env.NODE_EXTRA_CA_CERTS;
  const tracer = spawn(CLI, args, { stdio: ['ignore', wfd, err], env });
  if (typeof wfd === 'number') closeSync(wfd);
  closeSync(err);
  let exitAt = 0;
  const exited = new Promise((resolve) =>
    tracer.on('exit', (code, signal) => {
      exitAt = performance.now();
      resolve({ code, signal });
    }),
  );
  let hwm = 0;
  const sampler = setInterval(() => {
    const v = hwmKb(tracer.pid);
    if (v) hwm = Math.max(hwm, v);
  }, 100);
  await until(() => /Attached \d+ probe/.test(readFileSync(errPath, 'utf8')), 60_000, 'bpfscope to attach');
  const load1 = loadavg()[0];
  const workloads = [0, 1].map((cpu) => {
    const out = join(dir, `${mode}.w${cpu}.json`);
    rmSync(out, { force: true });
    const w = spawn('taskset', ['-c', String(cpu), bins.workload, 'getppid-for', String(seconds + 3), '0', out], {
      stdio: 'ignore',
    });
    return { out, done: new Promise((r) => w.on('exit', r)) };
  });
  const t0 = performance.now();
  await sleep(seconds * 1000);
  const sigintAt = performance.now();
  tracer.kill('SIGINT');
  const end = await Promise.race([exited, sleep(60_000).then(() => null)]);
  clearInterval(sampler);
  if (!end) tracer.kill('SIGKILL');
  await Promise.all(workloads.map((w) => w.done));
  const calls = workloads.map((w) => JSON.parse(readFileSync(w.out, 'utf8')).calls);
  if (sink) await new Promise((r) => (sink.exitCode !== null ? r() : sink.on('exit', r)));
  let sinkText;
  if (mode === 'file') {
    sinkText = execFileSync(bins.sink, {
      stdio: [openSync(filePath, 'r'), 'pipe', 'inherit'],
      maxBuffer: 1 << 24,
    }).toString();
  } else {
    sinkText = readFileSync(sinkOut, 'utf8');
  }
  const s = parseSink(sinkText);
  const stderr = readFileSync(errPath, 'utf8');
  const lostReported = [...stderr.matchAll(/^Lost (\d+) events$/gm)].reduce((a, m) => a + Number(m[1]), 0);
  const otherStderr = stderr
    .split('\n')
    .filter((l) => l && !/^Lost \d+ events$/.test(l) && !/^Attached \d+ probe/.test(l));
  rmSync(filePath, { force: true });
  rmSync(fifo, { force: true });
  const lostInBpf = s.bpfCount == null || s.delivered == null ? null : s.bpfCount - s.delivered;
  return {
    mode,
    seconds,
    load1AtStart: Math.round(load1 * 10) / 10,
    workloadCalls: calls.reduce((a, b) => a + b, 0),
    bpfCount: s.bpfCount,
    delivered: s.delivered,
    deliveredPerSec: s.delivered == null ? null : Math.round(s.delivered / ((sigintAt - t0) / 1000)),
    bytes: s.bytes,
    lostInBpf,
    lostReported,
    lossesEqual: lostInBpf === lostReported,
    hwmMb: Math.round((hwm / 1024) * 10) / 10,
    sigintToExitMs: end ? Math.round(exitAt - sigintAt) : null,
    exit: end ? (end.code ?? end.signal) : 'SIGKILL after 60 s',
    otherStderr,
  };
}

async function main() {
  const seconds = Number(opts.seconds);
  const stall = Number(opts.stall);
  const dir = join(tmpdir(), `bpfscope-flood-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const bins = { workload: join(dir, 'bpfs_flood'), sink: join(dir, 'flood_sink') };
  execFileSync('cc', ['-O2', '-o', bins.workload, join(ROOT, 'bench', 'c', 'workload.c')]);
  execFileSync('cc', ['-O2', '-o', bins.sink, join(HERE, 'flood_sink.c')]);
  if (!existsSync(CLI)) throw new Error(`flood: ${CLI} is missing (npm run build)`);
  const results = [];
  for (const mode of opts.modes.split(',')) {
    process.stderr.write(`flood: ${mode}, ${seconds} s\n`);
    const r = await runMode(mode, dir, bins, seconds, stall);
    process.stderr.write(JSON.stringify(r) + '\n');
    results.push(r);
  }
  rmSync(dir, { recursive: true, force: true });
  const commit = execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD']).toString().trim();
  mkdirSync(opts.out, { recursive: true });
  writeFileSync(
    join(opts.out, 'flood.json'),
    JSON.stringify({ commit, date: new Date().toISOString(), program: PROGRAM, stall, results }, null, 1) + '\n',
  );
  console.log(
    '| output | s | load | workload calls | @n (BPF) | delivered | events/s | lost: @n - delivered | Lost N notices | equal | VmHWM MB | SIGINT → exit ms | exit |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    console.log(
      `| ${r.mode} | ${r.seconds} | ${r.load1AtStart} | ${r.workloadCalls} | ${r.bpfCount} | ${r.delivered} | ${r.deliveredPerSec} | ${r.lostInBpf} | ${r.lostReported} | ${r.lossesEqual ? 'yes' : 'NO'} | ${r.hwmMb} | ${r.sigintToExitMs} | ${r.exit} |`,
    );
  }
}

await main();
