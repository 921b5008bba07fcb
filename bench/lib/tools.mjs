/**
 * Tools (issue 4, item 6): launch to the tool's first output line ("Tracing... Hit Ctrl-C to end." or the column
 * header, printed once its probes are attached), then SIGINT to exit, for every tool of issue 5 (plus profile and
 * offcputime) that runs from Debian's bpfcc-tools here (`/usr/sbin/<tool>-bpfcc`, Python, with PYTHONUNBUFFERED=1 so
 * the line is not held in a pipe buffer). `bpfscope <tool>` is measured beside it (A B A B ...) when it exists:
 * `bpfscope <tool> -h` exits 0 with the tool's own usage (not the generic bpftrace-style usage, which any unknown
 * name would give, being taken for a script file name). A bcc tool that fails in round 1 is reported with its error
 * and not retried; a bcc tool without a bpfscope counterpart is measured in at most BCC_ALONE_ROUNDS rounds (its
 * numbers are context, with no ratio).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cpus } from 'node:os';
import { bccHeaders, CLI } from './env.mjs';
import { launch, sleep, waitPerfFds } from './proc.mjs';

/** Issue 5's tools, then issue 3's profile and offcputime. Extra arguments for the multi-tools. */
export const TOOL_CANDIDATES = [
  'execsnoop',
  'opensnoop',
  'exitsnoop',
  'killsnoop',
  'statsnoop',
  'syncsnoop',
  'threadsnoop',
  'bashreadline',
  'syscount',
  'biolatency',
  'biosnoop',
  'biotop',
  'bitesize',
  'runqlat',
  'runqlen',
  'cpudist',
  'hardirqs',
  'softirqs',
  'tcplife',
  'tcpconnect',
  'tcpaccept',
  'tcpretrans',
  'tcpdrop',
  'gethostlatency',
  'memleak',
  'oomkill',
  'cachestat',
  'vfsstat',
  'filetop',
  'ext4slower',
  'funccount',
  'funclatency',
  'stackcount',
  'trace',
  'argdist',
  'capable',
  'llcstat',
  'profile',
  'offcputime',
];

export const TOOL_ARGS = {
  funccount: ['t:syscalls:sys_enter_openat'],
  funclatency: ['c:getpid'],
  stackcount: ['t:syscalls:sys_enter_openat'],
  trace: ['t:syscalls:sys_enter_openat'],
  argdist: ['-C', 't:syscalls:sys_enter_openat():int:args->dfd'],
};

/**
 * Tools whose first line comes before their probes are attached (bcc's profile prints "Sampling at ..." before it
 * compiles): also wait until they hold this many perf event fds (profile: one cpu-clock event per CPU).
 */
export const TOOL_LIVE_FDS = { profile: () => cpus().length };

/** True when `bpfscope <tool>` exists (see the module comment). */
export function oursExists(tool) {
  const r = spawnSync(process.execPath, [CLI, tool, '-h'], { encoding: 'utf8', timeout: 15000 });
  const text = `${r.stdout}${r.stderr}`;
  return r.status === 0 && !/bpfscope \[options\] filename/.test(text);
}

/** Rounds for bcc tools measured alone. */
export const BCC_ALONE_ROUNDS = 3;

const ERROR_LINE = /^(error|failed|unable|usage)/i;

async function toolOnce(tool, cmd, args, env) {
  const h = launch({
    cmd,
    args,
    readyRe: /\S/,
    readyOn: 'stdout',
    env: { ...process.env, PYTHONUNBUFFERED: '1', ...env },
    timeoutMs: 30000,
  });
  let readyMs = await h.ready;
  if (readyMs !== null && TOOL_LIVE_FDS[tool]) readyMs = await waitPerfFds(h, TOOL_LIVE_FDS[tool](), 25000);
  // A tool that ends by itself right after its first line printed an error, not a ready line.
  if (readyMs !== null) await sleep(50);
  const aliveAtReady = h.child.exitCode === null && h.child.signalCode === null;
  h.signal('SIGINT');
  const ex = await h.exited;
  // A line followed by a Python traceback (other than the Ctrl-C's own KeyboardInterrupt) is a failure to start.
  const lastErr = (h.err() || h.out()).trim().split('\n').slice(-1)[0]?.slice(0, 160);
  const interrupted = lastErr === 'KeyboardInterrupt';
  const traceback = /Traceback \(most recent call last\)/.test(h.err()) && !interrupted;
  const ok = readyMs !== null && aliveAtReady && !h.timedOut && !traceback && !ERROR_LINE.test(h.readyLine ?? '');
  return {
    ok,
    readyMs,
    exitMs: ex.ms,
    line: h.readyLine,
    peakKb: h.peakHwmKb || null,
    ...(ok ? {} : { error: lastErr || `exit ${ex.code ?? ex.signal}` }),
  };
}

/**
 * @param {{ rounds: number, log: Function, only?: string[] }} opts
 */
export async function runTools({ rounds, log, only }) {
  const candidates = (only?.length ? only : TOOL_CANDIDATES).filter((t) => existsSync(`/usr/sbin/${t}-bpfcc`));
  const ours = Object.fromEntries(candidates.map((t) => [t, oursExists(t)]));
  const headers = bccHeaders();
  const raw = {};
  const failed = {};
  for (let r = 0; r < rounds; r++) {
    for (const t of candidates) {
      if (failed[t] && !ours[t]) continue;
      // bcc alone (no bpfscope tool to compare with): context only, 3 rounds keep the run short
      if (!ours[t] && r >= Math.min(rounds, BCC_ALONE_ROUNDS)) continue;
      raw[t] ??= { bpfscope: [], bcc: [] };
      const extra = TOOL_ARGS[t] ?? [];
      if (ours[t]) {
        const a = await toolOnce(t, process.execPath, [CLI, t, ...extra], {});
        raw[t].bpfscope.push(a);
        if (!a.ok) log(`  bpfscope ${t}: FAILED ${a.error}`);
      }
      if (failed[t]) continue;
      const b = await toolOnce(t, `/usr/sbin/${t}-bpfcc`, extra, headers.env);
      if (!b.ok && r === 0) {
        failed[t] = b.error;
        continue;
      }
      raw[t].bcc.push(b);
    }
    log(`  tools round ${r + 1}/${rounds} done (${candidates.length - Object.keys(failed).length} bcc tools run here)`);
  }
  for (const [t, v] of Object.entries(raw)) if (!v.bcc.length && !v.bpfscope.some((x) => x.ok)) delete raw[t];
  const rows = [];
  for (const [t, v] of Object.entries(raw)) {
    const why = failed[t]
      ? ' (bpfscope alone: bcc does not run here)'
      : ours[t]
        ? ''
        : ' (bcc alone: no `bpfscope ' + t + '` yet)';
    rows.push({
      name: `${t}: launch → first line${why}`,
      unit: 'ms',
      ours: v.bpfscope.filter((x) => x.ok).map((x) => x.readyMs),
      peer: v.bcc.filter((x) => x.ok).map((x) => x.readyMs),
      target: { op: '<=', ratio: 0.1 },
    });
  }
  const firstLines = Object.fromEntries(
    Object.entries(raw).map(([t, v]) => [t, { bcc: v.bcc[0]?.line ?? null, bpfscope: v.bpfscope[0]?.line ?? null }]),
  );
  return { rows, raw, failed, ours, firstLines, headersNote: headers.note };
}
