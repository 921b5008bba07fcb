/**
 * Launching and watching a tracer process for the benchmarks: time from launch to a ready line (probes attached) and
 * to exit, and samples of /proc/PID/stat (utime+stime, in clock ticks) and /proc/PID/status (VmHWM, VmRSS, in kB)
 * every `sampleMs` until the process exits.
 *
 * All times are CLOCK_MONOTONIC (process.hrtime), in ms since launch unless named `*Ns` (absolute ns, comparable
 * with the C workload's clock_gettime(CLOCK_MONOTONIC)).
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** Clock ticks per second for /proc/PID/stat utime/stime (USER_HZ; 100 on Linux x86-64). */
export const CLK_TCK = 100;

/** Now, CLOCK_MONOTONIC ns as a Number (exact enough: < 2^53 for 104 days of uptime). */
export function monoNs() {
  return Number(process.hrtime.bigint());
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** utime+stime of a process in clock ticks (all its threads), or null when it is gone. */
export function cpuTicks(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // fields after the comm: state is f[0] (field 3); utime is field 14, stime field 15
    return Number(f[11]) + Number(f[12]);
  } catch {
    return null;
  }
}

/** { hwmKb, rssKb } from /proc/PID/status, or null when the process (or its mm) is gone. */
export function memKb(pid) {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'latin1');
    const hwm = /VmHWM:\s+(\d+) kB/.exec(s);
    const rss = /VmRSS:\s+(\d+) kB/.exec(s);
    if (!hwm) return null;
    return { hwmKb: Number(hwm[1]), rssKb: rss ? Number(rss[1]) : null };
  } catch {
    return null;
  }
}

/** How many of a process's fds (/proc/PID/fd link targets) satisfy `match`; null when it is gone. */
function countFds(pid, match) {
  let fds;
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return null;
  }
  let n = 0;
  for (const fd of fds) {
    try {
      if (match(readlinkSync(`/proc/${pid}/fd/${fd}`))) n++;
    } catch {
      /* closed meanwhile */
    }
  }
  return n;
}

/** Number of perf event fds (`anon_inode:[perf_event]`) a process holds; null when it is gone. */
export function perfEventFds(pid) {
  return countFds(pid, (l) => l === 'anon_inode:[perf_event]');
}

/**
 * Attachments a process holds: perf event fds (tracepoints, uprobes, perf events) plus BPF link fds (raw_tp, tp_btf,
 * uprobe_multi, ...) from /proc/PID/fd; null when it is gone.
 */
export function attachFds(pid) {
  return countFds(pid, (l) => l === 'anon_inode:[perf_event]' || l === 'anon_inode:bpf_link');
}

/** Resolves with ms since launch once `pid` holds at least `want` perf event fds, or null after `timeoutMs`. */
export async function waitPerfFds(h, want, timeoutMs = 5000) {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const n = perfEventFds(h.pid);
    if (n === null) return null;
    if (n >= want) return (monoNs() - h.t0Ns) / 1e6;
    await sleep(0.5);
  }
  return null;
}

const CAP = 1 << 20;

/**
 * Launch `cmd args` and watch it.
 * @param {object} o
 * @param {string} o.cmd
 * @param {string[]} o.args
 * @param {RegExp} [o.readyRe] a line matching this (on `o.readyOn`) means probes are attached
 * @param {'stdout'|'stderr'|'either'} [o.readyOn]
 * @param {any} [o.stdout] 'pipe' (captured, up to 1 MiB), 'ignore', a file descriptor or a stream
 * @param {number} [o.sampleMs] /proc sampling period (default 2)
 * @param {(s: {t: number, tNs: number, cpu: number|null, hwmKb: number|null}) => void} [o.onSample]
 * @param {number} [o.timeoutMs] SIGKILL after this long (default 120000)
 * @param {object} [o.env]
 * @returns handle with `pid`, `t0Ns`, `ready` (Promise of ms or null if the process ended first), `exited`
 *   (Promise of { code, signal, ms }), `samples`, `out()`, `err()`, `signal(name)` (records the time of the first
 *   SIGINT/SIGTERM as `signalMs`)
 */
export function launch(o) {
  const t0Ns = monoNs();
  const child = spawn(o.cmd, o.args, {
    stdio: ['ignore', o.stdout ?? 'pipe', 'pipe'],
    env: o.env ?? process.env,
  });
  const h = {
    pid: child.pid,
    t0Ns,
    child,
    samples: [],
    signalMs: null,
    readyLine: null,
    peakHwmKb: 0,
    stdoutText: '',
    stderrText: '',
  };
  const ms = () => (monoNs() - t0Ns) / 1e6;
  let readyResolve;
  h.ready = new Promise((r) => {
    readyResolve = r;
  });
  const partial = { stdout: '', stderr: '' };
  const scan = (which, chunk) => {
    const text = chunk.toString('latin1');
    const key = which === 'stdout' ? 'stdoutText' : 'stderrText';
    if (h[key].length < CAP) h[key] += text.slice(0, CAP - h[key].length);
    if (!o.readyRe || h.readyLine !== null) return;
    if (o.readyOn !== 'either' && o.readyOn !== which) return;
    partial[which] += text;
    const lines = partial[which].split('\n');
    partial[which] = lines.pop() ?? '';
    for (const line of lines) {
      if (o.readyRe.test(line)) {
        h.readyLine = line;
        h.readyMs = ms();
        readyResolve(h.readyMs);
        return;
      }
    }
  };
  child.stdout?.on('data', (c) => scan('stdout', c));
  child.stderr.on('data', (c) => scan('stderr', c));
  const sample = () => {
    const cpu = cpuTicks(h.pid);
    const mem = memKb(h.pid);
    const s = { t: ms(), tNs: monoNs(), cpu, hwmKb: mem?.hwmKb ?? null, rssKb: mem?.rssKb ?? null };
    if (cpu !== null) h.samples.push(s);
    if (s.hwmKb !== null && s.hwmKb > h.peakHwmKb) h.peakHwmKb = s.hwmKb;
    o.onSample?.(s);
  };
  const timer = setInterval(sample, o.sampleMs ?? 2);
  const killer = setTimeout(() => {
    h.timedOut = true;
    child.kill('SIGKILL');
  }, o.timeoutMs ?? 120000);
  h.exited = new Promise((resolve) => {
    let streamsOpen = (child.stdout ? 1 : 0) + 1;
    let exitInfo = null;
    const done = () => {
      if (exitInfo && streamsOpen === 0) resolve(exitInfo);
    };
    const onClose = () => {
      streamsOpen--;
      done();
    };
    child.stdout?.on('close', onClose);
    child.stderr.on('close', onClose);
    child.on('exit', (code, signal) => {
      const t = ms();
      clearInterval(timer);
      clearTimeout(killer);
      readyResolve(null);
      exitInfo = { code, signal, ms: t };
      done();
    });
    child.on('error', (e) => {
      clearInterval(timer);
      clearTimeout(killer);
      readyResolve(null);
      resolve({ code: null, signal: null, ms: ms(), error: e.message });
    });
  });
  h.sampleNow = sample;
  h.signal = (name) => {
    if (h.signalMs === null) h.signalMs = ms();
    try {
      child.kill(name);
    } catch {
      /* already gone */
    }
  };
  h.out = () => h.stdoutText;
  h.err = () => h.stderrText;
  return h;
}

/** CPU ticks of the last sample at or before `tNs` (absolute CLOCK_MONOTONIC ns), else the first sample's. */
export function cpuAt(samples, tNs) {
  let best = null;
  for (const s of samples) {
    if (s.tNs <= tNs) best = s;
    else break;
  }
  return (best ?? samples[0])?.cpu ?? null;
}

/** CPU ticks of the first sample at or after `tNs`, else the last sample's. */
export function cpuAfter(samples, tNs) {
  for (const s of samples) if (s.tNs >= tNs) return s.cpu;
  return samples.at(-1)?.cpu ?? null;
}
