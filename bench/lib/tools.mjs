/**
 * Tools (issue 4, item 6; issue 5's acceptance): launch to the tool's first output line ("Tracing... Hit Ctrl-C to
 * end." or the column header, printed once its probes are attached), then SIGINT to exit, for every tool that
 * `bpfscope tools` lists, beside Debian's bpfcc-tools counterpart (`/usr/sbin/<tool>-bpfcc`, Python, with
 * PYTHONUNBUFFERED=1 so the line is not held in a pipe buffer), A B A B ... `bpfscope <tool>` counts as existing when
 * `bpfscope <tool> -h` exits 0 with the tool's own usage (not the generic bpftrace-style usage, which any unknown
 * name would give, being taken for a script file name). A bcc tool that fails in round 1 is reported with its error
 * and the kernel feature it lacks, and not retried; a bcc tool without a bpfscope counterpart (only with --tools) is
 * measured in at most BCC_ALONE_ROUNDS rounds (its numbers are context, with no ratio).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cpus } from 'node:os';
import { bccHeaders, CLI } from './env.mjs';
import { attachFds, launch, sleep, waitPerfFds } from './proc.mjs';

/**
 * The tools `bpfscope tools` lists (first word of each line of its first block, in its order: the bcc tools; the
 * block after the empty line, "Other commands:", is not tools), run with `cli` (default: this checkout's bundle);
 * [] when the CLI cannot list them.
 */
export function bpfscopeTools(cli = CLI) {
  const r = spawnSync(process.execPath, [cli, 'tools'], { encoding: 'utf8', timeout: 15000 });
  if (r.status !== 0) return [];
  const lines = r.stdout.split('\n');
  const end = lines.findIndex((l) => l.trim() === '');
  return lines
    .slice(0, end < 0 ? lines.length : end)
    .map((l) => l.split(/\s+/)[0])
    .filter(Boolean);
}

/**
 * Why a bcc tool does not run here, from the last line of its error output: the kernel feature it lacks, in one
 * phrase, or null when the error is not one of the known ones (the error itself is reported either way).
 */
export function lackOf(error) {
  const e = String(error ?? '');
  if (/kprobe|kretprobe/i.test(e)) return 'kprobes (this kernel has none; bcc reads kprobes/blacklist or attaches one)';
  if (/Need super-user privileges/.test(e))
    return 'fentry: bcc picks kfunc programs (the kernel has BPF trampolines), their load fails with EPERM';
  if (/KALLSYMS_ALL/.test(e)) return 'kprobes and CONFIG_KALLSYMS_ALL (bcc looks up ext4_file_operations)';
  if (/perf_event_open failed/.test(e)) return 'hardware PMU events';
  if (/Failed to compile BPF module/.test(e)) {
    return "nothing: bcc's C does not compile against Debian's 6.1 headers (slabratetop: slub_def.h needs mm/slab.h's struct slab)";
  }
  return null;
}

/** Extra arguments that make both bcc's and bpfscope's multi-tools start tracing on this kernel. */
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

/**
 * Tools that print nothing until their first interval ends (argdist prints `[HH:MM:SS]` and its counts after 1 s,
 * bcc and bpfscope alike): for them "started" is holding this many perf event fds (argdist here: one tracepoint),
 * not a line, for both tools.
 */
export const TOOL_NO_LINE_FDS = { argdist: () => 1 };

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
  const noLine = TOOL_NO_LINE_FDS[tool];
  const h = launch({
    cmd,
    args,
    readyRe: /\S/,
    readyOn: 'stdout',
    env: { ...process.env, PYTHONUNBUFFERED: '1', ...env },
    timeoutMs: 30000,
  });
  let readyMs = noLine ? await waitPerfFds(h, noLine(), 25000) : await h.ready;
  // BPF links and perf event fds held when the line came: 0 means the line came before any attach
  const fdsAtLine = readyMs !== null ? attachFds(h.pid) : null;
  if (readyMs !== null && TOOL_LIVE_FDS[tool]) readyMs = await waitPerfFds(h, TOOL_LIVE_FDS[tool](), 25000);
  // A tool that ends by itself right after its first line printed an error, not a ready line.
  if (readyMs !== null) await sleep(50);
  const aliveAtReady = h.child.exitCode === null && h.child.signalCode === null;
  h.signal('SIGINT');
  const ex = await h.exited;
  // A line followed by a Python traceback (other than the Ctrl-C's own KeyboardInterrupt) is a failure to start.
  const lastErr = (h.err() || h.out()).trim().split('\n').slice(-1)[0]?.slice(0, 300);
  const interrupted = lastErr === 'KeyboardInterrupt';
  const traceback = /Traceback \(most recent call last\)/.test(h.err()) && !interrupted;
  const ok = readyMs !== null && aliveAtReady && !h.timedOut && !traceback && !ERROR_LINE.test(h.readyLine ?? '');
  return {
    ok,
    readyMs,
    exitMs: ex.ms,
    line: noLine ? `(${noLine()} perf event fd)` : h.readyLine,
    fdsAtLine,
    peakKb: h.peakHwmKb || null,
    ...(ok ? {} : { error: lastErr || `exit ${ex.code ?? ex.signal}`, stderr: h.err().slice(0, 2000) }),
  };
}

/**
 * @param {{ rounds: number, log: Function, only?: string[] }} opts
 */
export async function runTools({ rounds, log, only }) {
  const listed = only?.length ? only : bpfscopeTools();
  if (!listed.length) throw new Error('`bpfscope tools` listed nothing: is dist/ built?');
  const noBcc = listed.filter((t) => !existsSync(`/usr/sbin/${t}-bpfcc`));
  const candidates = listed.filter((t) => !noBcc.includes(t));
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
        const a = await toolOnce(t, CLI, [t, ...extra], {});
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
  // bpfscope tools that never started: their (one-sentence) error, as for bcc's
  const oursFailed = {};
  for (const [t, v] of Object.entries(raw)) {
    if (v.bpfscope.length && !v.bpfscope.some((x) => x.ok)) oursFailed[t] = v.bpfscope[0].error;
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
  const lacks = Object.fromEntries(Object.entries(failed).map(([t, e]) => [t, lackOf(e)]));
  return { rows, raw, failed, lacks, oursFailed, noBcc, ours, firstLines, args: TOOL_ARGS, headersNote: headers.note };
}
